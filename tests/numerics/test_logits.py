"""Logit match, for every family of the family table (tests/family_table.py):
the exported graph, fed what the genai runtime would feed (`llm2hef inputs`),
reproduces the Hugging Face last-position logits at every reference length up
to the cache. Each fixture is exported at each of its caches with each of the
family's numerics options, plus the table's extra runs (Phi's sigmoid GELU,
Gemma 3's band beyond the window).

An exact export (SiLU, ReLU, gelu_new as tanh, OPT's and GPT-2's positions as an
exact Fourier re-expression, GeGLU's tanh formula) allows only float32 noise.
An option the table marks approximate (the sigmoid GELU of GPT-2 and Phi,
x * sigmoid(1.702 x)) is judged by direction only, and its figure reported."""
from __future__ import annotations

import pytest

from conftest import logit_runs, params, reference
from numerics_checks import check_logits_match_hf, logit_cases

EXACT = {"max_abs": 1e-4, "min_cosine": 0.99999}
APPROXIMATE = {"max_abs": None, "min_cosine": 0.999}
# Every export is checked at these lengths and at its full cache.
REQUIRED_LENGTHS = {1, 2, 3, 7}
# A fixture in its family's `short_references` (e.g. llama-bigvocab, whose
# 40960-token vocabulary makes each reference large) skips lengths 2 and 3.
SHORT_REQUIRED_LENGTHS = {1, 7}


@pytest.mark.parametrize("run,length", logit_cases(logit_runs()))
def test_logits_match_hf(run, length, exports, report, record_property, tmp_path):
    ex = exports.get(*run)
    bar = EXACT if run.exact else APPROXIMATE
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="logits", label=run.id, **bar)


@pytest.mark.parametrize("run", params(logit_runs()))
def test_every_required_length_is_covered(run):
    """1, 2, 3, a few and the full cache, for every export."""
    short = run.fixture in run.family.numerics.short_references
    required = (SHORT_REQUIRED_LENGTHS if short else REQUIRED_LENGTHS) | {run.cache}
    lengths = {L for L in reference(run.fixture) if L <= run.cache}
    assert required <= lengths, (run.id, sorted(lengths))
