"""Logit match for Gemma 3 (two RoPE bases, QK-Norm (1 + w), sliding layers at a
cache within the window, final soft-capping), Gemma 2 (attention and final
soft-capping) and OLMo 2 (post-norms, full-width QK-Norm): the exported graph,
fed what the genai runtime would feed (`llm2hef inputs`), reproduces the Hugging
Face last-position logits. GeGLU's gelu_pytorch_tanh is written out as its own
tanh formula, so nothing is approximated: only float32 noise is allowed."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, post_norm_combos, reference
from numerics_checks import check_logits_match_hf, logit_cases

MAX_ABS = 1e-4
MIN_COSINE = 0.99999


@pytest.mark.parametrize("combo,length", logit_cases(post_norm_combos(), llama_combo_id))
def test_post_norm_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="post_norm_logits",
                          max_abs=MAX_ABS, min_cosine=MIN_COSINE, label=f"{fixture} cache {cache}")


def test_every_required_length_is_covered():
    """1, 2, 3, a few and the full cache, for every export."""
    for fixture, cache, _ in post_norm_combos():
        lengths = {L for L in reference(fixture) if L <= cache}
        assert {1, 2, 3, 7, cache} <= lengths, (fixture, cache, sorted(lengths))
