"""What only LFM2 has (the table-driven files judge its exports like every
family's): the structure that makes the conv layers cacheable (no op mixes
time steps except MatMuls whose first operand comes from the mask alone and
whose second operand, B*x, is cache-shaped; those shift matrices are exactly
0/1 for the runtime's masks), the cache cost the conv layers add, and HF's
`theta` alias. What the adapter refuses is in tests/cli/export/test_family_refusals.py."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from conftest import FIXTURES, INPUT_NAMES, contract_runs, fixture_info, params, reference, run_llm2hef

RUNS = params(r for r in contract_runs() if r.family.adapter == "lfm2")


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


@pytest.mark.parametrize("run", RUNS)
def test_conv_layers_interact_only_through_cacheable_matmuls(run, exports):
    """No op that mixes the time axis on its own (Conv, Pad, Gather, Expand, Cumsum,
    Shape-dependent ops); per conv layer kernel-1 shift MatMuls [1, 1, N, N] x [1, 1, N, H]
    (the P V of a one-head attention) whose second operand is cache-shaped
    (shape[-2] == N) and data-dependent."""
    fixture, N, _ = run
    cfg = cfg_of(fixture)
    g = Graph(load(exports.get(*run)))
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


@pytest.mark.parametrize("run", [r for r in RUNS if r.values[0].cache == 32])
def test_shift_matrices_are_exact(run, exports, tmp_path):
    """D_s, fed the runtime's masks for several prompt lengths, is exactly 1 at
    the token s steps back (when it exists) and 0 elsewhere on every real row."""
    import onnx
    import onnxruntime as ort
    fixture, N, _ = run
    ex = exports.get(*run)
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


@pytest.mark.parametrize("run", RUNS)
def test_cache_cost(run, exports):
    """The adapter's cost figures, apart from its options: per position, K and V
    of each attention layer and one B*x row of each conv layer."""
    cfg = cfg_of(run.fixture)
    man = exports.get(*run).manifest
    cost = man["cache_cost"]
    assert "cache_values_per_position" not in man["options"]
    conv = cfg["layer_types"].count("conv")
    attn = cfg["layer_types"].count("full_attention")
    assert cost["values_per_position"] == (attn * 2 * cfg["num_attention_heads"] * cfg["head_dim"]
                                           + conv * cfg["hidden_size"])


def edited_copy(tmp_path, edit):
    d = tmp_path / "model"
    shutil.copytree(FIXTURES / "lfm2-tiny", d)
    cfg = json.loads((d / "config.json").read_text())
    edit(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def test_theta_alias_wins_over_rope_theta(tmp_path):
    """HF's Lfm2Config reads `theta` before rope_theta; so must the adapter."""
    d = edited_copy(tmp_path, lambda c: c.update(theta=5000.0, rope_theta=1e6))
    out = tmp_path / "out"
    run_llm2hef(["export", d, "-o", out, "--cache", 32, "--prefill", 8])
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    hd = cfg_of("lfm2-tiny")["head_dim"]
    want = 1.0 / 5000.0 ** (np.arange(0, hd, 2) / hd)
    np.testing.assert_allclose(theta[:hd // 2], want, rtol=1e-6)
