"""Logit match for LFM2: the exported graph, its short-conv layers carried by
mask-derived shift matmuls on a cached B*x, fed what the genai runtime would
feed (`llm2hef inputs`), reproduces Hugging Face's full-sequence fp32 logits at
prompt lengths 1, 2, 3, a few and the full cache. Nothing is approximated, so
the Llama-family bar applies."""
from __future__ import annotations

import pytest

from conftest import lfm2_combos, llama_combo_id
from numerics_checks import check_logits_match_hf, logit_cases

MAX_ABS = 1e-4
MIN_COSINE = 0.99999


@pytest.mark.parametrize("combo,length", logit_cases(lfm2_combos(), llama_combo_id))
def test_lfm2_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="lfm2_logits",
                          max_abs=MAX_ABS, min_cosine=MIN_COSINE, label=f"{fixture} cache {cache}")


def test_every_required_length_is_covered():
    """1, 2, 3, a few and the full cache, for every export."""
    from conftest import reference
    for fixture, cache, _ in lfm2_combos():
        lengths = {L for L in reference(fixture) if L <= cache}
        assert {1, 2, 3, 7, cache} <= lengths, (fixture, cache, sorted(lengths))
