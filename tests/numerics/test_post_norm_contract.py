"""Graph and packaging contract of the Gemma 2/3 and OLMo 2 exports: I/O shapes
(the pe tables are T wide, T = 2 * head_dim per distinct RoPE base: Gemma 3 has
its local and global bases side by side), theta = HF's inv_freq buffers,
embeddings unscaled (the sqrt(hidden) scale is in the graph), lint clean, the
sliding-window note, and the runtime layout of `llm2hef inputs`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import INPUT_NAMES, fixture_info, llama_combo_id, post_norm_combos, reference, run_llm2hef
from numerics_checks import (
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in post_norm_combos()]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def expected_theta(fixture) -> np.ndarray:
    """HF's inv_freq buffers, each twice: the sliding layers' base first, then the
    full-attention layers' base when it differs (and both kinds of layer exist)."""
    info = fixture_info(fixture)
    types = info["config"]["layer_types"]
    inv = {t: np.asarray(v, np.float32) for t, v in info["rotary_emb_inv_freq_by_layer_type"].items()}
    bases = []
    for t in ["sliding_attention", "full_attention"]:
        if t in types and not any(np.array_equal(inv[t], b) for b in bases):
            bases.append(inv[t])
    return np.concatenate([np.concatenate([b, b]) for b in bases])


@pytest.mark.parametrize("combo", COMBOS)
def test_onnx_checker_full(combo, exports):
    check_onnx_full(exports.get(*combo))


@pytest.mark.parametrize("combo", COMBOS)
def test_io_names_order_shapes(combo, exports):
    import onnx
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    ex = exports.get(*combo)
    m = onnx.load(str(ex.out / "model.onnx"), load_external_data=False)
    T = expected_theta(fixture).size
    want = {"inputs_embeds": [1, N, cfg["hidden_size"]],
            "attention_mask": [1, 1, N, cfg["num_attention_heads"] * N],
            **{k: [1, N, T] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, cfg["vocab_size"])
    assert_inputs_consumed(m, subgraphs=False)
    assert_static_shapes(m)


def test_gemma3_uses_two_bases():
    """The fixtures do cover the two-base theta (and the one-base one)."""
    assert expected_theta("gemma3-tiny").size == 2 * cfg_of("gemma3-tiny")["head_dim"]
    assert expected_theta("gemma2-tiny").size == cfg_of("gemma2-tiny")["head_dim"]


@pytest.mark.parametrize("combo", COMBOS)
def test_theta_is_hf_inv_freq(combo, exports):
    fixture, N, _ = combo
    ex = exports.get(*combo)
    theta = np.load(ex.out / "resources" / "theta.npy")
    want = expected_theta(fixture)
    assert theta.dtype == np.float32 and theta.shape == want.shape, (theta.dtype, theta.shape)
    assert theta.size % 2 == 0, "the runtime fills two sections of T/2 columns: T must be even"
    ulps = np.abs(theta.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1, f"theta differs from HF's inv_freq by up to {int(ulps.max())} ulp"
    man = ex.manifest
    assert man["theta_length"] == want.size
    cfg = cfg_of(fixture)
    assert man["pe_tiles"] == {"q": cfg["num_attention_heads"], "k": cfg["num_key_value_heads"]}


@pytest.mark.parametrize("combo", COMBOS)
def test_embeddings_resource_is_unscaled(combo, exports, checkpoints):
    fixture, _, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    assert np.array_equal(emb, checkpoints(fixture)["model.embed_tokens.weight"])


@pytest.mark.parametrize("combo", COMBOS)
def test_lint_clean(combo, exports):
    ex = exports.get(*combo)
    proc = run_llm2hef(["lint", ex.out / "model.onnx", "--json"], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["errors"] == 0, report
    # The one warning every export has (the rank-4 mask needs net_input_format,
    # which compile.py passes); nothing specific to these families.
    others = [f for f in report["findings"] if f["severity"] != "info" and f["rule"] != "input-format"]
    assert not others, others


@pytest.mark.parametrize("combo", COMBOS)
def test_sliding_window_note(combo, exports):
    """With sliding layers, the plan says why the export is exact at this cache."""
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    notes = " ".join(exports.get(*combo).manifest.get("notes", []))
    if "sliding_attention" in cfg["layer_types"]:
        assert f"--cache {N} <= sliding_window {cfg['sliding_window']}" in notes, notes
        assert "exact" in notes
    else:
        assert "sliding_window" not in notes, notes


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.values[0][1] == 32])
def test_inputs_match_runtime_layout(combo, exports, tmp_path):
    fixture, N, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    refs = reference(fixture)
    for n in sorted({1, 3, N // 2 + 1, N}):
        tokens = refs[max(L for L in refs if L >= n)][0][:n]
        assert_runtime_layout(ex.inputs(tokens, tmp_path), emb, theta, tokens, N,
                              cfg_of(fixture)["num_attention_heads"])
