"""Graph and packaging contract of the Phi-3 / Phi / StableLM / GPT-NeoX
exports: the six runtime inputs and nothing else, static shapes, lint clean
(no error, no unknown op), manifest dims, and theta = HF's inv_freq twice
followed by zeros (partial rotary: cos 1 and sin 0 leave those dimensions
unrotated), equal to HF's buffer within 1 ulp; `llm2hef inputs` lays the
tables out as the runtime does. The longrope attention factor is in the graph
as a constant Mul on the rotary dimensions only."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import INPUT_NAMES, fixture_info, llama_combo_id, phi_combos, reference, run_llm2hef
from numerics_checks import (
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in phi_combos(caches=[32])]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def load(ex):
    import onnx
    return onnx.load(str(ex.out / "model.onnx"), load_external_data=False)


@pytest.mark.parametrize("combo", COMBOS)
def test_onnx_checker_full(combo, exports):
    check_onnx_full(exports.get(*combo))


@pytest.mark.parametrize("combo", COMBOS)
def test_io_is_the_six_runtime_inputs(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    m = load(exports.get(*combo))
    want = {"inputs_embeds": [1, N, cfg["hidden_size"]], "attention_mask": [1, 1, N, cfg["num_attention_heads"] * N],
            **{k: [1, N, cfg["head_dim"]] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, cfg["vocab_size"])
    assert_inputs_consumed(m, subgraphs=False)
    assert_static_shapes(m)


@pytest.mark.parametrize("combo", COMBOS)
def test_lint_clean(combo, exports):
    ex = exports.get(*combo)
    proc = run_llm2hef(["lint", ex.out / "model.onnx", "--json"], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    findings = json.loads(proc.stdout)["findings"]
    assert [f for f in findings if f["severity"] == "error" or f["rule"] == "unknown-op"] == [], findings


@pytest.mark.parametrize("combo", COMBOS)
def test_manifest_dims(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    man = exports.get(*combo).manifest
    d = man["dims"]
    got = (d["hidden"], d["layers"], d["vocab"], d["heads"], d["kv_heads"], d["head_dim"], d["intermediate"])
    want = (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"],
            cfg["num_key_value_heads"], cfg["head_dim"], cfg["intermediate_size"])
    assert got == want, (got, want)
    assert man["cache_size"] == N
    assert man["theta_length"] == cfg["head_dim"]
    assert man["pe_tiles"] == {"q": cfg["num_attention_heads"], "k": cfg["num_key_value_heads"]}


@pytest.mark.parametrize("combo", COMBOS)
def test_theta_is_inv_freq_twice_then_zeros(combo, exports):
    fixture, _, _ = combo
    cfg = cfg_of(fixture)
    theta = np.load(exports.get(*combo).out / "resources" / "theta.npy")
    inv = np.asarray(fixture_info(fixture)["rotary_emb_inv_freq"], np.float32)
    assert inv.shape == (cfg["rotary_dim"] // 2,)
    want = np.concatenate([inv, inv, np.zeros(cfg["head_dim"] - cfg["rotary_dim"], np.float32)])
    assert theta.dtype == np.float32 and theta.shape == want.shape, (theta.dtype, theta.shape)
    assert len(theta) % 2 == 0  # the runtime fills an even number of columns
    ulps = np.abs(theta.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1, (theta.tolist(), want.tolist())
    assert np.all(theta[cfg["rotary_dim"]:] == 0)


@pytest.mark.parametrize("combo", COMBOS)
def test_inputs_match_runtime_layout(combo, exports, tmp_path):
    fixture, N, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    tokens = reference(fixture)[N][0]
    for n in [1, N]:
        f = ex.inputs(tokens[:n], tmp_path)
        assert_runtime_layout(f, emb, theta, tokens[:n], N, cfg_of(fixture)["num_attention_heads"])
        rot = cfg_of(fixture)["rotary_dim"]
        for k in INPUT_NAMES[2:]:  # unrotated columns: exactly cos 1, sin 0
            assert np.all(f[k][0, N - n:, rot:] == (1.0 if "cos" in k else 0.0)), k


@pytest.mark.parametrize("combo", [c for c in COMBOS if fixture_info(c.values[0][0])["adapter"] == "phi3"])
def test_longrope_attention_factor_on_rotary_dims_only(combo, exports):
    from onnx import numpy_helper
    fixture, _, _ = combo
    cfg = cfg_of(fixture)
    m = load(exports.get(*combo))
    inits = {i.name: i for i in m.graph.initializer}
    factors = [numpy_helper.to_array(inits[n.input[1]]) for n in m.graph.node
               if n.op_type == "Mul" and n.name.endswith("rope_factor/Mul")]
    assert len(factors) == 2 * cfg["num_hidden_layers"], len(factors)
    af = np.float32(fixture_info(fixture)["rope_attention_scaling"])
    for f in factors:
        per_head = f.reshape(-1, cfg["head_dim"])
        assert np.all(per_head[:, :cfg["rotary_dim"]] == af) and np.all(per_head[:, cfg["rotary_dim"]:] == 1.0)
