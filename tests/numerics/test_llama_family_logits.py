"""Logit match for the Llama family (Qwen2, Llama incl. llama3 rope_scaling,
SmolLM3 with NoPE layers, Qwen3 with QK-norm, a sharded lm_head): the exported
graph, fed what the genai runtime would feed (`llm2hef inputs`), reproduces the
Hugging Face last-position logits. No approximation is involved (SiLU is exact),
so only float32 noise is allowed."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import llama_combos, llama_combo_id, reference

MAX_ABS = 1e-4
MIN_COSINE = 0.99999


def _cases():
    out = []
    for combo in llama_combos():
        fixture, cache, _ = combo
        for L in reference(fixture):
            if L <= cache:
                out.append(pytest.param(combo, L, id=f"{llama_combo_id(combo)}-L{L}"))
    return out


def cosine(a, b) -> float:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("combo,length", _cases())
def test_llama_family_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    tokens, ref = reference(fixture)[length]
    feeds = ex.inputs(tokens, tmp_path)
    logits = ex.run(feeds)
    assert logits.shape == (1, 1, ref.shape[0]), logits.shape
    got = logits[0, 0].astype(np.float32)
    assert np.all(np.isfinite(got)), "non-finite logits"
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    cos = cosine(got, ref)
    argmax_ok = int(np.argmax(got) == np.argmax(ref))
    passed = cos >= MIN_COSINE and diff <= MAX_ABS
    record_property("max_abs_diff", diff)
    record_property("cosine", cos)
    record_property("argmax_match", argmax_ok)
    report.append(dict(kind="llama_logits", fixture=fixture, cache=cache, gelu=gelu, length=length,
                       max_abs=diff, cosine=cos, argmax_ok=argmax_ok, passed=passed))
    msg = (f"{fixture} cache {cache} L={length}: max|diff| {diff:.3e}, "
           f"cosine {cos:.8f}, argmax {'same' if argmax_ok else 'differs'}")
    assert diff <= MAX_ABS, msg
    assert cos >= MIN_COSINE, msg
