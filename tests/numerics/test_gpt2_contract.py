"""Graph contract of the GPT-2 export (docs/lint.md "The graph contract",
hailo-contract.md sections 2, 6 and 9)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import FIXTURES, INPUT_NAMES, combo_id, combos, fixture_info, reference
from numerics_checks import (
    SUFFIX_ROLES,
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

CONTRACT_COMBOS = [pytest.param(c, id=combo_id(c)) for c in combos()]


def load_graph(ex):
    import onnx
    return onnx.load(str(ex.out / "model.onnx"), load_external_data=False)


def theta_len(ex) -> int:
    return int(np.load(ex.out / "resources" / "theta.npy").shape[0])


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_onnx_checker_full(combo, exports):
    check_onnx_full(exports.get(*combo))


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_io_names_order_shapes(combo, exports):
    import onnx
    fixture, cache, _ = combo
    cfg = fixture_info(fixture)["config"]
    ex = exports.get(*combo)
    m = load_graph(ex)
    N, H, V, heads = cache, cfg["n_embd"], cfg["vocab_size"], cfg["n_head"]
    T = theta_len(ex)
    want = {"inputs_embeds": [1, N, H], "attention_mask": [1, 1, N, heads * N],
            "pe_q_cos": [1, N, T], "pe_q_sin": [1, N, T], "pe_k_cos": [1, N, T], "pe_k_sin": [1, N, T]}
    assert_graph_io(m, want, V)
    assert m.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert T % 2 == 0 and T > 0, T

    # Every input is consumed by at least one node (inside subgraphs too, should there be any).
    assert_inputs_consumed(m, subgraphs=True)
    # Static shapes all the way: shape inference finds no symbolic dimension.
    assert_static_shapes(m)


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_manifest(combo, exports):
    fixture, cache, _ = combo
    cfg = fixture_info(fixture)["config"]
    ex = exports.get(*combo)
    man = ex.manifest
    assert man["cache_size"] == cache
    assert man["prefill"] == ex.prefill
    assert [i["name"] for i in man["inputs"]] == INPUT_NAMES
    assert all("role" in i and "shape" in i for i in man["inputs"])
    T = theta_len(ex)
    shapes = {i["name"]: list(i["shape"]) for i in man["inputs"]}
    assert shapes["inputs_embeds"] == [1, cache, cfg["n_embd"]]
    assert shapes["attention_mask"] == [1, 1, cache, cfg["n_head"] * cache]
    for n in INPUT_NAMES[2:]:
        assert shapes[n] == [1, cache, T], (n, shapes[n])
    assert [(o["name"], list(o["shape"])) for o in man["outputs"]] == [("logits", [1, 1, cfg["vocab_size"]])]
    d = man["dims"]
    assert (d["hidden"], d["layers"], d["vocab"], d["heads"], d["kv_heads"], d["head_dim"]) == (
        cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_head"], cfg["n_head"], cfg["head_dim"])
    for f in ["optimize.alls", "compile.alls", "compile.py", "resources/tokenizer.json"]:
        assert (ex.out / f).is_file() and (ex.out / f).stat().st_size > 0, f


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_external_data(combo, exports, checkpoints):
    from onnx.external_data_helper import uses_external_data
    fixture, _, _ = combo
    ex = exports.get(*combo)
    onnx_path, data_path = ex.out / "model.onnx", ex.out / "model.onnx.data"
    assert data_path.is_file(), "model.onnx.data missing"
    m = load_graph(ex)
    locations = set()
    for t in m.graph.initializer:
        if uses_external_data(t):
            info = {e.key: e.value for e in t.external_data}
            locations.add(info["location"])
        else:
            # Small constants may stay inline; weights may not.
            assert t.ByteSize() <= 64 * 1024, f"initializer {t.name} ({t.ByteSize()} bytes) is inline"
    assert locations == {"model.onnx.data"}, locations
    ckpt = checkpoints(fixture)
    weights = sum(v.size * 4 for k, v in ckpt.items() if k != "wpe.weight")
    data_size = data_path.stat().st_size
    assert data_size >= 0.95 * weights, (data_size, weights)
    assert onnx_path.stat().st_size < data_size / 2, (onnx_path.stat().st_size, data_size)


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_embeddings_resource_is_wte(combo, exports, checkpoints):
    fixture, _, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    wte = checkpoints(fixture)["wte.weight"]
    assert emb.dtype == np.float32
    assert emb.shape == wte.shape
    assert np.array_equal(emb, wte), f"max |diff| {np.abs(emb - wte).max()}"


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_theta_resource(combo, exports):
    ex = exports.get(*combo)
    theta = np.load(ex.out / "resources" / "theta.npy")
    assert theta.dtype == np.float32 and theta.ndim == 1
    assert theta.shape[0] % 2 == 0 and theta.shape[0] > 0
    assert np.all(np.isfinite(theta))


@pytest.mark.parametrize("combo", CONTRACT_COMBOS)
def test_hailo_config(combo, exports):
    fixture, cache, _ = combo
    info = fixture_info(fixture)
    ex = exports.get(*combo)
    hc = json.loads((ex.out / "resources" / "hailo-config.json").read_text())
    assert hc["eos_token_id"] == info["eos_token_id"]
    stop = hc["stop_token_id"]
    assert isinstance(stop, list) and info["eos_token_id"] in stop, stop
    pp = hc["pre_process_params"]
    assert pp["kv_cache_size"] == cache
    assert pp["prefill_input_tokens_count"] == ex.prefill
    assert "prefill_input_tokens_size" not in pp  # silently ignored by the runtime
    assert pp["num_attention_heads"] == info["config"]["n_head"]
    if "num_key_value_heads" in pp:
        assert pp["num_key_value_heads"] == info["config"]["n_head"]
    suffixes = hc["input_layers_names_suffixes"]
    assert set(SUFFIX_ROLES) <= set(suffixes), suffixes
    values = [suffixes[r] for r in SUFFIX_ROLES]
    assert len(set(values)) == len(values), f"two roles share a suffix: {suffixes}"
    # The DFC names inputs input_layer1..6 in ONNX input order.
    # so each role must name the layer of its ONNX input (embeddings = inputs_embeds).
    for i, role in enumerate(SUFFIX_ROLES):
        assert str(suffixes[role]).endswith(f"input_layer{i + 1}"), (role, suffixes[role])
    tok = json.loads((ex.out / "resources" / "tokenizer.json").read_text())
    assert tok["model"]["type"] == "BPE"
    assert {t["content"]: t["id"] for t in tok["added_tokens"]}["<|endoftext|>"] == info["eos_token_id"]


@pytest.mark.parametrize("combo", [pytest.param(c, id=combo_id(c)) for c in combos(["default"])])
def test_inputs_match_runtime_layout(combo, exports, tmp_path):
    """`llm2hef inputs` lays the prompt out as the genai runtime does."""
    fixture, cache, _ = combo
    heads = fixture_info(fixture)["config"]["n_head"]
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    T = theta.shape[0]
    lengths = sorted({1, 3, cache // 2 + 1, cache})
    for n in lengths:
        tokens = reference(fixture)[max(L for L in reference(fixture) if L >= n)][0][:n]
        f = ex.inputs(tokens, tmp_path)
        assert set(f) == set(INPUT_NAMES) | {"positions"}, sorted(f)
        shapes = {"inputs_embeds": (1, cache, emb.shape[1]), "attention_mask": (1, 1, cache, heads * cache)}
        for k in INPUT_NAMES:
            assert f[k].dtype == np.float32, (k, f[k].dtype)
            assert f[k].shape == shapes.get(k, (1, cache, T)), (k, f[k].shape)
        assert f["positions"].dtype == np.int64 and f["positions"].shape == (cache,)
        pad = cache - n
        # Real tokens bottom-aligned at positions 0..n-1.
        assert np.array_equal(f["positions"][pad:], np.arange(n))
        # Embeddings; mask (padding rows allow everything; real row r blocks the
        # padding columns and the future; additive 0 / -100; tiled head-major);
        # RoPE tables: cos/sin(theta * p), float32 product.
        assert_runtime_layout(f, emb, theta, tokens, cache, heads)


def test_fixture_checkpoints_readable(checkpoints):
    """The conftest safetensors reader sees what the fixtures promise."""
    for name in ["gpt2-tiny", "gpt2-openai-layout", "gpt2-sharded-bf16"]:
        info = fixture_info(name)
        cfg = info["config"]
        sd = checkpoints(name)
        assert sd["wte.weight"].shape == (cfg["vocab_size"], cfg["n_embd"])
        assert sd["wpe.weight"].shape == (cfg["n_positions"], cfg["n_embd"])
        assert sd["h.0.attn.c_attn.weight"].shape == (cfg["n_embd"], 3 * cfg["n_embd"])
        assert f"h.{cfg['n_layer'] - 1}.mlp.c_proj.weight" in sd and "lm_head.weight" not in sd
        cfg_json = json.loads((FIXTURES / name / "config.json").read_text())
        assert cfg_json["vocab_size"] == cfg["vocab_size"]
