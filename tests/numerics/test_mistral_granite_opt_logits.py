"""Logit match for Mistral (sliding_window null, and a window equal to the
cache), Granite (all four multipliers) and OPT (pre-LN, post-LN with
project_in/out, no biases and no affine LayerNorms): the exported graph, fed
what the genai runtime would feed (`llm2hef inputs`), reproduces the Hugging
Face last-position logits at every reference length up to the cache. Nothing
is approximated (SiLU and ReLU are exact; OPT's positions are an exact
Fourier re-expression), so the Llama-family bar applies."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, mistral_granite_opt_combos, reference
from numerics_checks import check_logits_match_hf, logit_cases

MAX_ABS = 1e-4
MIN_COSINE = 0.99999


@pytest.mark.parametrize("combo,length", logit_cases(mistral_granite_opt_combos(), llama_combo_id))
def test_mistral_granite_opt_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="mistral_granite_opt_logits",
                          max_abs=MAX_ABS, min_cosine=MIN_COSINE, label=f"{fixture} cache {cache}")


def test_every_required_length_is_covered():
    """1, 2, a few and the full cache, for every export."""
    for fixture, cache, _ in mistral_granite_opt_combos():
        lengths = {L for L in reference(fixture) if L <= cache}
        assert {1, 2, 7, cache} <= lengths, (fixture, cache, sorted(lengths))
