"""Graph and packaging contract of the Mistral, Granite and OPT exports: I/O
shapes (OPT's runtime rows are word_embed_proj_dim wide), the onnx checker,
theta (RoPE inv_freq twice, or OPT's Fourier frequencies), the embedding
resource, what the plan says it rewrote (sliding window, multipliers,
positions), and OPT's learned positions with their offset of 2."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import INPUT_NAMES, OPT_FIXTURES, fixture_info, llama_combo_id, mistral_granite_opt_combos
from numerics_checks import assert_graph_io, assert_inputs_consumed, assert_static_shapes, check_onnx_full

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in mistral_granite_opt_combos()]
OPT_COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in mistral_granite_opt_combos(OPT_FIXTURES)]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def is_opt(fixture):
    return fixture in OPT_FIXTURES


def theta_length(fixture, cache):
    if is_opt(fixture):
        k = cache // 2 + 1
        return k + k % 2
    cfg = cfg_of(fixture)
    return cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])


def embed_width(fixture):
    cfg = cfg_of(fixture)
    return cfg["word_embed_proj_dim"] if is_opt(fixture) else cfg["hidden_size"]


def embed_tensor(fixture):
    return "model.decoder.embed_tokens.weight" if is_opt(fixture) else "model.embed_tokens.weight"


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
    T, heads = theta_length(fixture, N), cfg["num_attention_heads"]
    want = {"inputs_embeds": [1, N, embed_width(fixture)], "attention_mask": [1, 1, N, heads * N],
            **{k: [1, N, T] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, cfg["vocab_size"])
    assert_inputs_consumed(m, subgraphs=False)
    assert_static_shapes(m)


@pytest.mark.parametrize("combo", COMBOS)
def test_manifest_dims_and_rewrites(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    man = exports.get(*combo).manifest
    d = man["dims"]
    assert (d["hidden"], d["layers"], d["vocab"], d["heads"], d["kv_heads"], d["head_dim"]) == (
        embed_width(fixture), cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"],
        cfg["num_key_value_heads"], cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"]))
    assert man["theta_length"] == theta_length(fixture, N)
    text = "\n".join(man["rewrites"] + man["notes"])
    if fixture == "mistral-tiny":
        assert "sliding_window null" in text, text
    if fixture == "mistral-window":
        assert "sliding_window 64" in text and f"--cache {N}" in text and "exact" in text, text
    if fixture == "granite-tiny":
        for what, value in [("embedding multiplier", "12"), ("attention multiplier", "0.125"),
                            ("residual multiplier", "0.22"), ("logit scale", "0.166666")]:
            assert f"{what} {value}" in text, (what, text)
    if is_opt(fixture):
        assert f"embed_positions rows 2..{N + 1}" in text, text
        assert ("post-LN" in text) == (not cfg["do_layer_norm_before"]), text
        assert ("project_in" in text) == (cfg["word_embed_proj_dim"] != cfg["hidden_size"]), text


@pytest.mark.parametrize("combo", COMBOS)
def test_theta(combo, exports):
    fixture, N, _ = combo
    theta = np.load(exports.get(*combo).out / "resources" / "theta.npy")
    if is_opt(fixture):
        k = np.arange(N // 2 + 1)
        want = (2 * math.pi * k / N).astype(np.float32)
        want = np.concatenate([want, np.zeros(len(want) % 2, np.float32)])
        np.testing.assert_allclose(theta, want, rtol=1e-6, atol=0)
    else:
        inv = np.asarray(fixture_info(fixture)["rotary_emb_inv_freq"], np.float32)
        assert np.array_equal(theta, np.concatenate([inv, inv])), (theta, inv)


@pytest.mark.parametrize("combo", COMBOS)
def test_embeddings_resource(combo, exports, checkpoints):
    fixture, _, _ = combo
    emb = np.load(exports.get(*combo).out / "resources" / "embeddings.npy")
    table = checkpoints(fixture)[embed_tensor(fixture)]
    assert emb.dtype == np.float32 and np.array_equal(emb, table)


def positions_model(src, dst):
    """The export with the rebuilt position rows (the output of scope
    model/positions) as a second graph output."""
    import onnx
    m = onnx.load(str(src), load_external_data=False)
    node = [n for n in m.graph.node if n.name == "/model/positions/sin_hi/Add"]
    assert len(node) == 1, "no /model/positions/sin_hi/Add node"
    name = node[0].output[0]
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims[:2] + [0]))
    m.graph.output[-1].type.tensor_type.shape.ClearField("dim")
    onnx.save(m, str(dst))
    return name


@pytest.mark.parametrize("combo", OPT_COMBOS)
def test_opt_positions_are_rows_offset_by_two(combo, exports, checkpoints, tmp_path):
    """Fed a full prompt (token at row p has position p, as the runtime lays out
    a left-aligned prompt and as HF derives positions from an all-ones mask:
    cumsum - 1), the rebuilt positions equal embed_positions rows p + 2, and not
    rows p (the offset is really applied)."""
    import onnxruntime as ort
    fixture, N, _ = combo
    ex = exports.get(*combo)
    dst = ex.out / "model_with_positions.onnx"
    name = positions_model(ex.out / "model.onnx", dst)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(dst), so, providers=["CPUExecutionProvider"])
    tokens = np.arange(N) % cfg_of(fixture)["vocab_size"]
    feeds = ex.inputs(tokens, tmp_path)
    got = sess.run([name], {k: feeds[k] for k in INPUT_NAMES})[0][0]
    table = checkpoints(fixture)["model.decoder.embed_positions.weight"]
    assert table.shape[0] == cfg_of(fixture)["max_position_embeddings"] + 2
    err = float(np.abs(got - table[2:N + 2]).max())
    assert err < 1e-5, f"positions differ from embed_positions[2:{N + 2}] by {err}"
    assert float(np.abs(got - table[:N]).max()) > 0.1, "rows without the offset match too: the test cannot tell"
