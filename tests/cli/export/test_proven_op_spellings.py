"""Gemma 3 and LFM2 graphs written in the spellings of the attention that ran on
silicon (issue 37, part 2; hailo-contract.md section 2):

- a per-head norm over ONE head (Gemma 3's k: every released size has one KV
  head) is the plain RMSNorm (Pow, ReduceMean, Add, Sqrt, Div, Mul, Mul), not a
  1-wide segment MatMul; several heads keep the segment form;
- `--sliding-window band` adds a constant of the scores' own shape
  [1, heads, S, S]: the DFC broadcasts over heads by repeating, not tiling;
- LFM2's conv shifts are the P V MatMul of a one-head attention, rank 4, with
  every Reshape a head split (followed by its Transpose) or a head merge (after
  one): no bare rank-4 -> rank-3 Reshape of the mask, no rank-3 activation MatMul.

The exactness of these graphs against transformers is tests/numerics' job.
The binary comes from $LLM2HEF_BIN (ctest sets it), else build/llm2hef.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llm2hef_cli import BIN, FIXTURES

RMS_NORM = ["Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Mul"]


def run(*args: object) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


class Graph:
    def __init__(self, out: Path):
        import onnx
        self.m = onnx.load(str(out / "model.onnx"), load_external_data=False)
        self.init = {i.name: list(i.dims) for i in self.m.graph.initializer}
        self.shape = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
                      for vi in list(self.m.graph.value_info) + list(self.m.graph.input)}
        self.shape.update(self.init)
        self.producer = {o: n for n in self.m.graph.node for o in n.output}
        self.consumers: dict[str, list] = {}
        for n in self.m.graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)

    def nodes(self, part: str) -> list:
        return [n for n in self.m.graph.node if part in n.name]

    def is_activation(self, name: str) -> bool:
        """Computed from a graph input (not from initializers alone)."""
        todo, seen = [name], set()
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            if t in self.shape and t not in self.init and t not in self.producer:
                return True  # a graph input
            if t in self.producer:
                todo.extend(self.producer[t].input)
        return False


def export(tmp_path: Path, fixture: str, *extra: object, cache: int = 64) -> Graph:
    out = tmp_path / fixture
    run("export", FIXTURES / fixture, "-o", out, "--cache", cache, "--prefill", 8, "--no-progress", *extra)
    run("lint", out / "model.onnx")  # exit 0: lint accepts the spellings
    return Graph(out)


def config(fixture: str) -> dict:
    return json.loads((FIXTURES / fixture / "config.json").read_text())


def test_gemma3_one_kv_head_k_norm_is_the_plain_rmsnorm(tmp_path):
    fixture = "gemma3-window"
    cfg = config(fixture)
    assert cfg["num_key_value_heads"] == 1 and cfg["num_attention_heads"] > 1
    g = export(tmp_path, fixture, cache=32)  # its window
    for layer in range(cfg["num_hidden_layers"]):
        k_norm = g.nodes(f"/layers.{layer}/attn/k_norm/")
        assert [n.op_type for n in k_norm] == RMS_NORM, [(n.op_type, n.name) for n in k_norm]
        assert [a for a in k_norm[1].attribute if a.name == "axes"][0].ints == [-1]
        # q has several heads: the per-head segment form stays.
        assert any(n.op_type == "MatMul" for n in g.nodes(f"/layers.{layer}/attn/q_norm/")), layer
    # Nowhere a MatMul by a 1-wide constant (a one-head segment sum).
    for n in g.m.graph.node:
        if n.op_type == "MatMul" and n.input[1] in g.init:
            assert g.init[n.input[1]][-1] > 1, n.name
    manifest = json.loads((tmp_path / fixture / "manifest.json").read_text())
    assert "QK-Norm (1 + w) of q through constant segment matrices, of k as a plain RMSNorm (one KV head), " \
           "before RoPE" in manifest["rewrites"], manifest["rewrites"]


def test_gemma3_several_kv_heads_keep_the_segment_form(tmp_path):
    fixture = "gemma3-tiny"
    assert config(fixture)["num_key_value_heads"] > 1
    g = export(tmp_path, fixture)
    assert any(n.op_type == "MatMul" for n in g.nodes("/layers.0/attn/k_norm/"))


def test_gemma3_band_has_the_scores_shape(tmp_path):
    fixture, cache = "gemma3-window", 64
    heads = config(fixture)["num_attention_heads"]
    g = export(tmp_path, fixture, "--sliding-window", "band")
    bands = [name for name in g.init if name.endswith("band")]
    assert len(bands) == 1 and g.init[bands[0]] == [1, heads, cache, cache], {b: g.init[b] for b in bands}
    adds = g.consumers[bands[0]]
    assert adds and all(n.op_type == "Add" for n in adds)
    for n in adds:  # no broadcast: both operands and the sum have the band's shape
        assert [g.shape[i] for i in n.input] == [[1, heads, cache, cache]] * 2, n.name
    # Every head holds the same band: -100 where the key is W or more back.
    import numpy as np
    import onnx
    import onnx.numpy_helper
    m = onnx.load(str(tmp_path / fixture / "model.onnx"))
    band = onnx.numpy_helper.to_array(next(i for i in m.graph.initializer if i.name == bands[0]))
    window = config(fixture)["sliding_window"]
    rows, cols = np.indices((cache, cache))
    want = np.where(rows - cols >= window, -100.0, 0.0).astype(np.float32)
    for h in range(heads):
        assert np.array_equal(band[0, h], want), h
    # Its size is stated where export reports the rewrite, and in the notes.
    manifest = json.loads((tmp_path / fixture / "manifest.json").read_text())
    said = f"one constant band [1, {heads}, {cache}, {cache}] ({heads * cache * cache * 4} bytes"
    for kind in ("rewrites", "notes"):
        assert any(said in line for line in manifest[kind]), manifest[kind]


@pytest.mark.parametrize("fixture", ["lfm2-tiny", "lfm2-kernel4"])
def test_lfm2_shift_is_the_pv_of_a_one_head_attention(tmp_path, fixture):
    cfg = config(fixture)
    n_, h = 64, cfg["hidden_size"]
    g = export(tmp_path, fixture)
    # Every Reshape is a head split (rank 3 -> 4, then one Transpose) or a
    # head merge (rank 4 -> 3, after a Transpose).
    for n in [n for n in g.m.graph.node if n.op_type == "Reshape"]:
        src, dst = g.shape[n.input[0]], g.shape[n.output[0]]
        users = g.consumers.get(n.output[0], [])
        if len(src) == 3 and len(dst) == 4:
            assert [u.op_type for u in users] == ["Transpose"], (n.name, [u.name for u in users])
        else:
            assert (len(src), len(dst)) == (4, 3), (n.name, src, dst)
            assert g.producer[n.input[0]].op_type == "Transpose", n.name
    # Every MatMul of two activations is rank 4 (q k^T, P V, and the shifts).
    shifts = []
    for n in g.m.graph.node:
        if n.op_type == "MatMul" and all(g.is_activation(i) for i in n.input):
            assert [len(g.shape[i]) for i in n.input] == [4, 4], (n.name, [g.shape[i] for i in n.input])
            if "/conv/shift_" in n.name:
                shifts.append(n)
    assert len(shifts) == cfg["layer_types"].count("conv") * (cfg["conv_L_cache"] - 1)
    for n in shifts:
        assert [g.shape[i] for i in n.input] == [[1, 1, n_, n_], [1, 1, n_, h]], n.name
