"""Logit match for the Llama family (Qwen2, Llama incl. llama3 rope_scaling,
SmolLM3 with NoPE layers, Qwen3 with QK-norm, a sharded lm_head): the exported
graph, fed what the genai runtime would feed (`llm2hef inputs`), reproduces the
Hugging Face last-position logits. No approximation is involved (SiLU is exact),
so only float32 noise is allowed."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, llama_combos
from numerics_checks import check_logits_match_hf, logit_cases

MAX_ABS = 1e-4
MIN_COSINE = 0.99999


@pytest.mark.parametrize("combo,length", logit_cases(llama_combos(), llama_combo_id))
def test_llama_family_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="llama_logits",
                          max_abs=MAX_ABS, min_cosine=MIN_COSINE, label=f"{fixture} cache {cache}")
