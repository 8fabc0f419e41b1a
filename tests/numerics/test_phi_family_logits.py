"""Logit match for Phi-3 (longrope, partial rotary, fused qkv / gate_up),
Phi-2 (parallel attention + MLP, partial rotary 0.4, biases, gelu_new,
qk_layernorm), StableLM 2 (LayerNorm, partial rotary, qkv bias, per-head QK
LayerNorm, parallel residual) and GPT-NeoX (fused interleaved qkv, parallel
and sequential residual, exact GELU): the exported graph, fed what the genai
runtime would feed (`llm2hef inputs`), reproduces the Hugging Face
last-position logits at lengths 1..cache. Nothing is approximated (Phi with
`--gelu tanh`), so only float32 noise is allowed. Phi's default sigmoid GELU
is an approximation: judged by direction only, and its figure reported."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, phi_combos
from numerics_checks import check_logits_match_hf, logit_cases

MAX_ABS = 1e-4
MIN_COSINE = 0.99999
SIGMOID_MIN_COSINE = 0.999


@pytest.mark.parametrize("combo,length", logit_cases(phi_combos(), llama_combo_id))
def test_phi_family_logits_match_hf(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="phi_logits",
                          max_abs=MAX_ABS, min_cosine=MIN_COSINE, label=f"{fixture} cache {cache}")


@pytest.mark.parametrize("combo,length", logit_cases([("phi2-tiny", 64, "sigmoid")], llama_combo_id))
def test_phi_sigmoid_gelu_figure(combo, length, exports, report, record_property, tmp_path):
    fixture, cache, gelu = combo
    ex = exports.get(fixture, cache, gelu)
    check_logits_match_hf(ex, length, tmp_path, report, record_property, kind="phi_sigmoid_logits",
                          max_abs=None, min_cosine=SIGMOID_MIN_COSINE, label=f"{fixture} cache {cache} gelu sigmoid")


def test_every_switch_and_length_is_covered():
    """Lengths 1, 2, 3, a few and the full cache for every export; both residual
    placements, qk_layernorm, qkv bias and partial rotary appear."""
    from conftest import fixture_info, reference
    for fixture, cache, _ in phi_combos():
        lengths = {L for L in reference(fixture) if L <= cache}
        assert {1, 2, 3, 7, cache} <= lengths, (fixture, cache, sorted(lengths))
    cfgs = {f: fixture_info(f)["config"] for f, _, _ in phi_combos()}
    for arch in ["gpt_neox", "stablelm"]:
        kinds = {c["parallel_residual"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == arch}
        assert kinds == {True, False}, (arch, kinds)
    assert any(c["qk_layernorm"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "phi")
    assert {c["qkv_bias"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "stablelm"} == {True, False}
    assert any(c["qk_layernorm"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "stablelm")
    assert all(c["rotary_dim"] < c["head_dim"] for f, c in cfgs.items() if f != "phi3-longrope")
    assert {c["rope_type"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "phi3"} == {"longrope"}
