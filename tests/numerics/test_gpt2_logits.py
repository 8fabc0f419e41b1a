"""Logit match: the exported graph, fed what the genai runtime would feed
(`llm2hef inputs`), reproduces the Hugging Face last-position logits."""
from __future__ import annotations

import pytest

from conftest import combo_id, combos
from numerics_checks import check_logits_match_hf, logit_cases

# tanh is gelu_new itself: only float32 noise is allowed.  The sigmoid default
# (x * sigmoid(1.702 x)) is an approximation: judged by direction only.
THRESHOLDS = {"tanh": {"max_abs": 1e-4, "cosine": 0.99999},
              "default": {"max_abs": None, "cosine": 0.999}}


@pytest.mark.parametrize("combo,length", logit_cases(combos(), combo_id))
def test_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    th = THRESHOLDS[gelu]
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="logits",
                          max_abs=th["max_abs"], min_cosine=th["cosine"],
                          label=f"{fixture} cache {cache} gelu {gelu}")
