"""Graph and packaging contract of the LFM2 exports: the six runtime inputs and
nothing else, theta = HF's RoPE inv_freq twice (the conv layers add no
frequency), manifest and hailo-config, and the structure that makes the conv
layers cacheable: no op mixes time steps except MatMuls whose first operand
comes from the mask alone and whose second operand (B*x) is cache-shaped, and
those shift matrices are exactly 0/1 for the runtime's masks. Also what the
adapter refuses."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from conftest import (
    FIXTURES,
    INPUT_NAMES,
    fixture_info,
    lfm2_combos,
    llama_combo_id,
    reference,
    run_llm2hef,
)
from numerics_checks import (
    SUFFIX_ROLES,
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in lfm2_combos()]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def load(ex):
    import onnx
    return onnx.load(str(ex.out / "model.onnx"), load_external_data=False)


class Graph:
    """Producer map, static shapes (from the value_info the exporter records) and
    the graph inputs each tensor depends on."""

    def __init__(self, m):
        self.m = m
        self.producer = {o: n for n in m.graph.node for o in n.output}
        self.init = {i.name for i in m.graph.initializer}
        self.shape = {}
        for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
            self.shape[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        self._deps = {}

    def inputs_of(self, tensor: str) -> frozenset:
        if tensor in self._deps:
            return self._deps[tensor]
        todo, seen, found = [tensor], set(), set()
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            if t in INPUT_NAMES:
                found.add(t)
            elif t in self.producer:
                todo.extend(self.producer[t].input)
        self._deps[tensor] = frozenset(found)
        return self._deps[tensor]

    def shift_matmuls(self):
        """MatMuls whose first operand depends on the mask only (the conv shifts)."""
        return [n for n in self.m.graph.node if n.op_type == "MatMul" and n.input[0] not in self.init
                and n.input[1] not in self.init and self.inputs_of(n.input[0]) == {"attention_mask"}]


@pytest.mark.parametrize("combo", COMBOS)
def test_onnx_checker_full(combo, exports):
    check_onnx_full(exports.get(*combo))


@pytest.mark.parametrize("combo", COMBOS)
def test_io_is_the_six_runtime_inputs(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    m = load(exports.get(*combo))
    H, V, heads, T = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["head_dim"]
    want = {"inputs_embeds": [1, N, H], "attention_mask": [1, 1, N, heads * N],
            **{k: [1, N, T] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, V)
    assert_inputs_consumed(m, subgraphs=False)
    assert_static_shapes(m)


@pytest.mark.parametrize("combo", COMBOS)
def test_conv_layers_interact_only_through_cacheable_matmuls(combo, exports):
    """No op that mixes the time axis on its own (Conv, Pad, Gather, Expand, Cumsum,
    Shape-dependent ops); per conv layer kernel-1 shift MatMuls [1, 1, N, N] x [1, 1, N, H]
    (the P V of a one-head attention) whose second operand is cache-shaped
    (shape[-2] == N) and data-dependent."""
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    g = Graph(load(exports.get(*combo)))
    ops = {n.op_type for n in g.m.graph.node}
    assert not ops & {"Conv", "ConvTranspose", "Pad", "Gather", "GatherElements", "Expand", "CumSum", "Shape",
                      "Concat", "Loop", "Scan", "If"}, sorted(ops)
    shifts = g.shift_matmuls()
    conv_layers = cfg["layer_types"].count("conv")
    assert len(shifts) == conv_layers * (cfg["conv_L_cache"] - 1), [n.name for n in shifts]
    for n in shifts:
        assert g.shape[n.input[0]] == [1, 1, N, N], (n.name, g.shape[n.input[0]])
        assert g.shape[n.input[1]] == [1, 1, N, cfg["hidden_size"]], (n.name, g.shape[n.input[1]])
        assert g.inputs_of(n.input[1]) >= {"inputs_embeds"}, n.name
    # Every other activation x activation MatMul belongs to attention (q k^T, P V):
    # each attention layer has exactly two.
    # (An operand computed from constants only, like QK-Norm's transposed
    # segment matrix, depends on no graph input: it is no activation.)
    act = [n for n in g.m.graph.node if n.op_type == "MatMul" and g.inputs_of(n.input[0])
           and g.inputs_of(n.input[1]) and n not in shifts]
    assert len(act) == 2 * cfg["layer_types"].count("full_attention"), [n.name for n in act]


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.values[0][1] == 32])
def test_shift_matrices_are_exact(combo, exports, tmp_path):
    """D_s, fed the runtime's masks for several prompt lengths, is exactly 1 at
    the token s steps back (when it exists) and 0 elsewhere on every real row."""
    import onnx
    import onnxruntime as ort
    fixture, N, _ = combo
    ex = exports.get(*combo)
    m = load(ex)
    g = Graph(m)
    shift_inputs = sorted({n.input[0] for n in g.shift_matmuls()})
    kernel = cfg_of(fixture)["conv_L_cache"]
    assert len(shift_inputs) == kernel - 1, shift_inputs  # built once, shared by every conv layer
    for name in shift_inputs:
        m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, [1, 1, N, N]))
    path = ex.out / "model_with_shifts.onnx"
    onnx.save(m, str(path))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    tokens = reference(fixture)[N][0]
    for n in [1, 2, 3, 5, N // 2, N]:
        feeds = ex.inputs(tokens[:n], tmp_path)
        got = sess.run(shift_inputs, {k: feeds[k] for k in INPUT_NAMES})
        pad = N - n
        # Which D_s is which: the one with a 1 at (N-1, N-1-s).
        by_shift = {}
        for d in got:
            d = d[0, 0]
            assert set(np.unique(d[pad:])) <= {0.0, 1.0}, np.unique(d[pad:])
            s = N - 1 - int(np.argmax(d[N - 1])) if d[N - 1].any() else None
            by_shift[s] = d
        for s in range(1, kernel):
            if n <= s:
                continue
            want = np.zeros((n, N), np.float32)
            for r in range(pad, N):
                if r - s >= pad:
                    want[r - pad, r - s] = 1.0
            assert s in by_shift, (n, sorted(k for k in by_shift if k is not None))
            assert np.array_equal(by_shift[s][pad:], want), f"D_{s} wrong for a {n}-token prompt"
        if n <= 1:
            for d in got:  # no past token at all: every real row is empty
                assert not d[0, 0][pad:].any()


@pytest.mark.parametrize("combo", COMBOS)
def test_manifest_and_theta(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    ex = exports.get(*combo)
    man = ex.manifest
    d = man["dims"]
    got = (d["hidden"], d["layers"], d["vocab"], d["heads"], d["kv_heads"], d["head_dim"], d["intermediate"])
    want = (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"],
            cfg["num_key_value_heads"], cfg["head_dim"], cfg["ffn_width"])
    assert got == want, (got, want)
    assert man["theta_length"] == cfg["head_dim"]
    assert man["pe_tiles"] == {"q": cfg["num_attention_heads"], "k": cfg["num_key_value_heads"]}
    cost = man["cache_cost"]  # the adapter's cost figures, apart from its options
    assert "cache_values_per_position" not in man["options"]
    conv = cfg["layer_types"].count("conv")
    attn = cfg["layer_types"].count("full_attention")
    assert cost["values_per_position"] == (attn * 2 * cfg["num_attention_heads"] * cfg["head_dim"]
                                                 + conv * cfg["hidden_size"])
    theta = np.load(ex.out / "resources" / "theta.npy")
    inv = np.asarray(fixture_info(fixture)["rotary_emb_inv_freq"], np.float32)
    want_theta = np.concatenate([inv, inv])
    assert theta.dtype == np.float32 and theta.shape == want_theta.shape
    ulps = np.abs(theta.view(np.int32).astype(np.int64) - want_theta.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1, (theta.tolist(), want_theta.tolist())


@pytest.mark.parametrize("combo", COMBOS)
def test_hailo_config_and_resources(combo, exports, checkpoints):
    fixture, N, _ = combo
    info = fixture_info(fixture)
    cfg = info["config"]
    ex = exports.get(*combo)
    hc = json.loads((ex.out / "resources" / "hailo-config.json").read_text())
    assert hc["eos_token_id"] == info["eos_token_ids"][0]
    pp = hc["pre_process_params"]
    assert pp["kv_cache_size"] == N and pp["prefill_input_tokens_count"] == ex.prefill
    assert pp["num_attention_heads"] == cfg["num_attention_heads"]
    assert pp["num_key_value_heads"] == cfg["num_key_value_heads"]
    for i, role in enumerate(SUFFIX_ROLES):
        assert str(hc["input_layers_names_suffixes"][role]).endswith(f"input_layer{i + 1}")
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    assert np.array_equal(emb, checkpoints(fixture)["model.embed_tokens.weight"])


@pytest.mark.parametrize("combo", [c for c in COMBOS if c.values[0][1] == 32])
def test_inputs_match_runtime_layout(combo, exports, tmp_path):
    fixture, N, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    tokens = reference(fixture)[N][0]
    for n in [1, 3, N]:
        f = ex.inputs(tokens[:n], tmp_path)
        assert_runtime_layout(f, emb, theta, tokens[:n], N, cfg_of(fixture)["num_attention_heads"])


# --------------------------------------------------------------------------- refusals
def edited_copy(tmp_path, edit):
    d = tmp_path / "model"
    shutil.copytree(FIXTURES / "lfm2-tiny", d)
    cfg = json.loads((d / "config.json").read_text())
    edit(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def export_of(d, tmp_path):
    out = tmp_path / "out"
    proc = run_llm2hef(["export", d, "-o", out, "--cache", 32, "--prefill", 8], check=False)
    return proc, proc.stdout + proc.stderr, out


def test_ffn_width_disagreeing_with_w1_is_bad_input(tmp_path):
    d = edited_copy(tmp_path, lambda c: c.update(block_ff_dim=1200))
    proc, text, out = export_of(d, tmp_path)
    assert proc.returncode == 3, text
    assert "config.json" in text and "block_ff_dim" in text and "feed_forward.w1.weight" in text, text
    assert not out.exists()


def test_unknown_layer_type_is_bad_input(tmp_path):
    d = edited_copy(tmp_path, lambda c: c["layer_types"].__setitem__(1, "mamba"))
    proc, text, out = export_of(d, tmp_path)
    assert proc.returncode == 3, text
    assert "layer_types" in text and "mamba" in text, text


def test_model_without_attention_is_refused(tmp_path):
    d = edited_copy(tmp_path, lambda c: c.update(layer_types=["conv"] * 4))
    proc, text, out = export_of(d, tmp_path)
    assert proc.returncode == 4, text  # refused before the (then missing) conv tensors of layer 2 are looked up
    assert "layer_types" in text and "no attention layer" in text, text
    assert not out.exists()


def test_theta_alias_wins_over_rope_theta(tmp_path):
    """HF's Lfm2Config reads `theta` before rope_theta; so must the adapter."""
    d = edited_copy(tmp_path, lambda c: c.update(theta=5000.0, rope_theta=1e6))
    out = tmp_path / "out"
    run_llm2hef(["export", d, "-o", out, "--cache", 32, "--prefill", 8])
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    hd = cfg_of("lfm2-tiny")["head_dim"]
    want = 1.0 / 5000.0 ** (np.arange(0, hd, 2) / hd)
    np.testing.assert_allclose(theta[:hd // 2], want, rtol=1e-6)
