"""`llm2hef lint`: every graph llm2hef exports passes; hand-made graphs break one rule each.

(a) exports of every fixture under tests/fixtures whose architecture an adapter
    claims (`llm2hef adapters --json`), plus every non-default choice of each
    adapter option (e.g. gpt2 --gelu tanh), lint with zero errors;
(b) one small onnx.helper graph per rule fails with exactly that rule id on the
    right node / input / output;
(c) a file that is not ONNX exits 3 and names the file.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"

SEQ, HID, NH, HD, VOCAB = 8, 16, 2, 8, 10


def run(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)


def lint_json(path):
    r = run("lint", path, "--json")
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert report["errors"] == sum(f["severity"] == "error" for f in report["findings"])
    assert report["warnings"] == sum(f["severity"] == "warning" for f in report["findings"])
    assert r.returncode == (1 if report["errors"] else 0)
    return r, report


def errors(report):
    return sorted((f["rule"], f["node"]) for f in report["findings"] if f["severity"] == "error")


def warnings(report):
    return sorted((f["rule"], f["node"]) for f in report["findings"] if f["severity"] == "warning")


# ---------------------------------------------------------------- (a) own exports


def _adapters():
    r = run("adapters", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["adapters"]


def _export_cases():
    adapters = _adapters()
    by_arch = {arch: a for a in adapters for arch in a["architectures"]}
    cases = []
    for folder in sorted(p for p in FIXTURES.iterdir() if (p / "config.json").is_file()):
        archs = json.loads((folder / "config.json").read_text()).get("architectures") or []
        adapter = next((by_arch[a] for a in archs if a in by_arch), None)
        if adapter is None:
            continue
        cases.append(pytest.param(folder, [], id=folder.name))
        for opt in adapter.get("options", []):
            for choice in opt.get("choices") or []:
                if choice != opt.get("default"):
                    extra = [f"--{opt['name']}", choice]
                    cases.append(pytest.param(folder, extra, id=f"{folder.name}-{opt['name']}-{choice}"))
    return cases


def test_gpt2_tiny_is_covered_with_both_gelu_forms():
    ids = [c.id for c in _export_cases()]
    assert "gpt2-tiny" in ids and "gpt2-tiny-gelu-tanh" in ids


@pytest.mark.parametrize("folder,extra", _export_cases())
def test_own_exports_pass_lint(tmp_path, folder, extra):
    out = tmp_path / "out"
    r = run("export", folder, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress", *extra)
    assert r.returncode == 0, r.stderr
    r, report = lint_json(out / "model.onnx")
    assert r.returncode == 0, r.stdout
    assert errors(report) == [], report["findings"]
    # Not a warning either (issue 28): the rank-4 mask's net_input_format is
    # in manifest.json beside it, which compile.py passes to the DFC.
    assert report["warnings"] == 0, report["findings"]
    text = run("lint", out / "model.onnx")
    assert text.returncode == 0
    assert "0 errors, 0 warnings" in text.stdout.splitlines()[-1]
    # The graph alone still gets the reminder.
    alone = json.loads(run("lint", out / "model.onnx", "--json", "--no-manifest").stdout)
    assert ("input-format", "attention_mask") in warnings(alone)


# ---------------------------------------------------------------- (b) hand-made graphs


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def f32(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def i64(values):
    return np.asarray(values, dtype=np.int64)


def vinfo(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


class G:
    """A tiny graph: x [1, SEQ, HID] in, last-position logits [1, 1, VOCAB] out, plus what a test adds."""

    def __init__(self, seq_shape=(1, SEQ, HID), opset=17):
        self.nodes, self.inits = [], []
        self.inputs = [vinfo("inputs_embeds", list(seq_shape))]
        self.opset = opset
        self.logits_shape = [1, 1, VOCAB]

    def node(self, op, inputs, name, **attrs):
        out = name + "_output_0"
        domain = attrs.pop("domain", "")
        self.nodes.append(helper.make_node(op, inputs, [out], name=name, domain=domain or None, **attrs))
        return out

    def init(self, name, array):
        self.inits.append(const(name, array))
        return name

    def linear(self, x, n_in, n_out, name, seed=1):
        return self.node("MatMul", [x, self.init(name + ".weight", f32(n_in, n_out, seed=seed))], name + "/MatMul")

    def slice(self, x, axis, start, end, name):
        names = [self.init(f"{name}.{k}", i64([v])) for k, v in
                 (("starts", start), ("ends", end), ("axes", axis), ("steps", 1))]
        return self.node("Slice", [x, *names], name)

    def head(self, x):
        last = self.slice(x, 1, SEQ - 1, SEQ, "/model/last_position/Slice")
        return self.finish(self.linear(last, HID, VOCAB, "/model/lm_head"))

    def finish(self, y, shape=None):
        self.nodes.append(helper.make_node("Identity", [y], ["logits"], name="/model/logits/Identity"))
        self.outputs = [vinfo("logits", shape or self.logits_shape)]
        graph = helper.make_graph(self.nodes, "g", self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model


def save(model, tmp_path, check=True):
    if check:
        onnx.checker.check_model(model, full_check=True)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def attention(g, x):
    """The contract's attention: head Reshape -> Transpose, Q K^T, softmax(-1), P V, back."""
    shape4 = g.init("/model/attn/shape4", i64([1, SEQ, NH, HD]))
    shape3 = g.init("/model/attn/shape3", i64([1, SEQ, HID]))
    heads = {}
    for which, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        p = g.linear(x, HID, HID, f"/model/attn/{which}_proj", seed=len(heads) + 2)
        r = g.node("Reshape", [p, shape4], f"/model/attn/{which}/Reshape")
        heads[which] = g.node("Transpose", [r], f"/model/attn/{which}/Transpose", perm=perm)
    s = g.node("MatMul", [heads["q"], heads["k"]], "/model/attn/qk/MatMul")
    s = g.node("Mul", [s, g.init("/model/attn/scale", np.float32(HD ** -0.5))], "/model/attn/qk/Mul")
    p = g.node("Softmax", [s], "/model/attn/Softmax", axis=-1)
    o = g.node("MatMul", [p, heads["v"]], "/model/attn/pv/MatMul")
    o = g.node("Transpose", [o], "/model/attn/out/Transpose", perm=[0, 2, 1, 3])
    o = g.node("Reshape", [o, shape3], "/model/attn/out/Reshape")
    return g.node("Add", [x, o], "/model/attn_residual/Add")


def test_contract_graph_is_clean(tmp_path):
    g = G()
    path = save(g.head(attention(g, "inputs_embeds")), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 0
    assert report["findings"] == []
    assert report["file"] == str(path)


def test_dynamic_input(tmp_path):
    g = G(seq_shape=(1, "seq", HID))
    path = save(g.head("inputs_embeds"), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 1
    assert errors(report) == [("dynamic-shape", "inputs_embeds")]
    f = report["findings"][0]
    assert f["kind"] == "input" and "Unspecified inputs" in f["message"] and f["section"] == "3"


def test_dynamic_shape_originates_at_a_node(tmp_path):
    g = G()
    # A Reshape whose target shape is computed at run time: the output shape cannot be known statically.
    n = g.node("ReduceMax", ["inputs_embeds"], "/model/len/ReduceMax", axes=[0, 1, 2], keepdims=0)
    n = g.node("Cast", [n], "/model/len/Cast", to=TensorProto.INT64)
    n = g.node("Reshape", [n, g.init("/model/len/one", i64([1]))], "/model/len/Reshape")
    n = g.node("Concat", [g.init("/model/len/head", i64([1, -1])), n], "/model/len/Concat", axis=0)
    y = g.node("Reshape", ["inputs_embeds", n], "/model/dyn/Reshape")
    g.nodes.append(helper.make_node("Identity", [y], ["side"], name="/model/side/Identity"))
    model = g.head("inputs_embeds")
    model.graph.output.append(vinfo("side", [1, SEQ, HID]))
    _, report = lint_json(save(model, tmp_path))
    assert ("dynamic-shape", "/model/dyn/Reshape") in errors(report)


def test_expand(tmp_path):
    g = G()
    k = g.linear("inputs_embeds", HID, HID // 2, "/model/layers.0/attn/k_proj")
    r = g.node("Reshape", [k, g.init("kv_shape", i64([1, SEQ, 1, HID // 2]))], "/model/layers.0/attn/k/Reshape")
    e = g.node("Expand", [r, g.init("rep", i64([1, SEQ, 2, HID // 2]))], "/model/layers.0/attn/k/Expand")
    t = g.node("Transpose", [e], "/model/layers.0/attn/k/Transpose", perm=[0, 2, 1, 3])
    back = g.node("Transpose", [t], "/model/layers.0/attn/k/Back", perm=[0, 2, 1, 3])
    flat = g.node("Reshape", [back, g.init("flat", i64([1, SEQ, HID]))], "/model/layers.0/attn/k/Flat")
    path = save(g.head(g.node("Add", ["inputs_embeds", flat], "/model/res/Add")), tmp_path)
    # The kv Reshape [1, S, HID/2] -> [1, S, 1, HID/2] is a head split whose consumer is the Expand: both are walls.
    r, report = lint_json(path)
    assert r.returncode == 1
    assert ("expand", "/model/layers.0/attn/k/Expand") in errors(report)
    assert {rule for rule, _ in errors(report)} == {"expand", "reshape-transpose"}
    expand = [f for f in report["findings"] if f["rule"] == "expand"][0]
    assert expand["op"] == "Expand" and expand["section"] == "2"


def test_expand_alone(tmp_path):
    g = G()
    e = g.node("Expand", ["inputs_embeds", g.init("shape", i64([1, SEQ, HID]))], "/model/gqa/Expand")
    _, report = lint_json(save(g.head(e), tmp_path))
    assert errors(report) == [("expand", "/model/gqa/Expand")]


def test_op_between_head_reshape_and_transpose(tmp_path):
    g = G()
    q = g.linear("inputs_embeds", HID, HID, "/model/layers.0/attn/q_proj")
    r = g.node("Reshape", [q, g.init("s4", i64([1, SEQ, NH, HD]))], "/model/layers.0/attn/q/Reshape")
    n = g.node("Mul", [r, g.init("qnorm_w", f32(HD, seed=3))], "/model/layers.0/attn/q_norm/Mul")
    t = g.node("Transpose", [n], "/model/layers.0/attn/q/Transpose", perm=[0, 2, 1, 3])
    b = g.node("Transpose", [t], "/model/layers.0/attn/out/Transpose", perm=[0, 2, 1, 3])
    o = g.node("Reshape", [b, g.init("s3", i64([1, SEQ, HID]))], "/model/layers.0/attn/out/Reshape")
    r_, report = lint_json(save(g.head(o), tmp_path))
    assert r_.returncode == 1
    assert errors(report) == [("reshape-transpose", "/model/layers.0/attn/q/Reshape")]
    assert "/model/layers.0/attn/q_norm/Mul" in report["findings"][0]["message"]


def test_gather_on_activation(tmp_path):
    g = G()
    y = g.node("Gather", ["inputs_embeds", g.init("last", i64([SEQ - 1]))], "/model/last_position/Gather", axis=1)
    path = save(g.finish(g.linear(y, HID, VOCAB, "/model/lm_head")), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 1
    assert errors(report) == [("gather-on-activation", "/model/last_position/Gather")]
    assert warnings(report) == []  # no duplicate unknown-op for a node that already has an error


def test_gather_on_constant_is_not_an_activation_gather(tmp_path):
    g = G()
    row = g.node("Gather", [g.init("table", f32(4, HID)), g.init("idx", i64(0))], "/model/bias/Gather", axis=0)
    path = save(g.head(g.node("Add", ["inputs_embeds", row], "/model/bias/Add")), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 0
    assert warnings(report) == [("unknown-op", "/model/bias/Gather")]


def test_rank4_input_format_warning(tmp_path):
    g = G()
    g.inputs.append(vinfo("attention_mask", [1, 1, SEQ, NH * SEQ]))
    m = g.node("Slice", ["attention_mask", g.init("st", i64([0])), g.init("en", i64([SEQ])), g.init("ax", i64([3]))],
               "/model/mask/Slice")
    g.node("Add", [m, g.init("zero", np.float32(0))], "/model/mask/Add")
    path = save(g.head("inputs_embeds"), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 0
    assert errors(report) == []
    assert warnings(report) == [("input-format", "attention_mask")]
    f = report["findings"][0]
    assert "Dims.HEIGHT" in f["message"] and f["section"] == "3"


def _mixing_reduce(g):
    return g.node("ReduceMean", ["inputs_embeds"], "/model/mix/ReduceMean", axes=[1], keepdims=1)


def _mixing_reduce_sum_axes_input(g):
    return g.node("ReduceSum", ["inputs_embeds", g.init("axes", i64([-2]))], "/model/mix/ReduceSum", keepdims=1)


def _mixing_softmax(g):
    return g.node("Softmax", ["inputs_embeds"], "/model/mix/Softmax", axis=1)


def _mixing_cumsum(g):
    return g.node("CumSum", ["inputs_embeds", g.init("axis", i64(1))], "/model/mix/CumSum")


def _mixing_conv(g):
    t = g.node("Transpose", ["inputs_embeds"], "/model/mix/in/Transpose", perm=[0, 2, 1])
    c = g.node("Conv", [t, g.init("w", f32(HID, HID, 3, seed=4))], "/model/mix/Conv", kernel_shape=[3], pads=[2, 0])
    return g.node("Transpose", [c], "/model/mix/out/Transpose", perm=[0, 2, 1])


def _mixing_matmul(g):
    # x [1, S, HID] reshaped to [1, 32, 4] times a [1, 4, 4] built from the last position: no SEQ axis anywhere.
    a = g.node("Reshape", ["inputs_embeds", g.init("sa", i64([1, SEQ * HID // 4, 4]))], "/model/mix/a/Reshape")
    last = g.slice("inputs_embeds", 1, SEQ - 1, SEQ, "/model/mix/last/Slice")
    b = g.node("Reshape", [last, g.init("sb", i64([1, 4, 4]))], "/model/mix/b/Reshape")
    m = g.node("MatMul", [a, b], "/model/mix/MatMul")
    return g.node("Reshape", [m, g.init("sc", i64([1, SEQ, HID]))], "/model/mix/out/Reshape")


def _mixing_const_left_matmul(g):
    return g.node("MatMul", [g.init("shift", f32(SEQ, SEQ, seed=5)), "inputs_embeds"], "/model/mix/MatMul")


@pytest.mark.parametrize("build,node", [
    (_mixing_reduce, "/model/mix/ReduceMean"),
    (_mixing_reduce_sum_axes_input, "/model/mix/ReduceSum"),
    (_mixing_softmax, "/model/mix/Softmax"),
    (_mixing_cumsum, "/model/mix/CumSum"),
    (_mixing_conv, "/model/mix/Conv"),
    (_mixing_matmul, "/model/mix/MatMul"),
    (_mixing_const_left_matmul, "/model/mix/MatMul"),
], ids=["reduce", "reduce-axes-input", "softmax-axis", "cumsum", "conv1d", "matmul", "const-left-matmul"])
def test_position_mixing(tmp_path, build, node):
    g = G()
    y = build(g)
    path = save(g.head(g.node("Add", ["inputs_embeds", y], "/model/mix_residual/Add")), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 1, report
    assert errors(report) == [("position-mixing", node)]
    finding = next(f for f in report["findings"] if f["rule"] == "position-mixing")
    assert finding["section"] == "2" and "graph contract, docs/lint.md" in finding["message"]


def test_position_wise_reductions_pass(tmp_path):
    g = G()
    m = g.node("ReduceMean", ["inputs_embeds"], "/model/ln/ReduceMean", axes=[-1], keepdims=1)
    y = g.node("Sub", ["inputs_embeds", m], "/model/ln/Sub")
    _, report = lint_json(save(g.head(y), tmp_path))
    assert report["findings"] == []


def test_unknown_op(tmp_path):
    g = G()
    y = g.node("LeakyRelu", ["inputs_embeds"], "/model/act/LeakyRelu", alpha=0.1)
    r, report = lint_json(save(g.head(y), tmp_path))
    assert r.returncode == 0
    assert errors(report) == []
    assert warnings(report) == [("unknown-op", "/model/act/LeakyRelu")]
    assert report["findings"][0]["op"] == "LeakyRelu"


# Erf: only inside torch's exact GELU (docs/lint.md, erf-outside-gelu). Each
# builder writes x -> GELU-ish -> y and returns (y, the Erf node's name).
SQRT2 = np.float32(np.sqrt(2.0))
ERF = "/model/mlp/gelu/Erf"


def _gelu_torch(g, x):
    """What torch.onnx writes for F.gelu(x) at opset 17 (symbolic_opset9.gelu)."""
    d = g.node("Div", [x, g.init("sqrt_2", SQRT2)], "/model/mlp/gelu/Div")
    e = g.node("Erf", [d], ERF)
    a = g.node("Add", [e, g.init("one", np.float32(1.0))], "/model/mlp/gelu/Add")
    m = g.node("Mul", [x, a], "/model/mlp/gelu/Mul")
    return g.node("Mul", [m, g.init("half", np.float32(0.5))], "/model/mlp/gelu/Mul_1")


def _erf_alone(g, x):
    return g.node("Erf", [x], ERF)


def _gelu_keras(g, x):
    """tf.nn.gelu's spelling: 0.5 * x first, then Add(1, erf), then the product
    (the parse that failed at Gelu/Erf in ankandrew/fast-plate-ocr issue 44)."""
    h = g.node("Mul", [g.init("half", np.float32(0.5)), x], "/model/mlp/gelu/mul")
    d = g.node("Div", [x, g.init("sqrt_2", SQRT2)], "/model/mlp/gelu/truediv")
    e = g.node("Erf", [d], ERF)
    a = g.node("Add", [g.init("one", np.float32(1.0)), e], "/model/mlp/gelu/add")
    return g.node("Mul", [h, a], "/model/mlp/gelu/mul_1")


def _gelu_by(divisor, mul_by_inverse=False, add_first=False, half=0.5, fan_out=False, other_x=False):
    def build(g, x):
        if mul_by_inverse:
            d = g.node("Mul", [x, g.init("inv_sqrt_2", np.float32(1 / np.sqrt(2)))], "/model/mlp/gelu/Mul_0")
        else:
            d = g.node("Div", [x, g.init("sqrt_2", np.float32(divisor))], "/model/mlp/gelu/Div")
        e = g.node("Erf", [d], ERF)
        one = g.init("one", np.float32(1.0))
        a = g.node("Add", [one, e] if add_first else [e, one], "/model/mlp/gelu/Add")
        y = g.linear(x, HID, HID, "/model/mlp/other", seed=5) if other_x else x
        m = g.node("Mul", [y, a], "/model/mlp/gelu/Mul")
        out = g.node("Mul", [m, g.init("half", np.float32(half))], "/model/mlp/gelu/Mul_1")
        if fan_out:
            out = g.node("Add", [out, e], "/model/mlp/extra/Add")
        return out
    return build


def test_erf_in_torch_gelu_passes(tmp_path):
    g = G()
    r, report = lint_json(save(g.head(_gelu_torch(g, "inputs_embeds")), tmp_path))
    assert r.returncode == 0
    assert report["findings"] == []


@pytest.mark.parametrize("build,needle", [
    (_erf_alone, "its input 'inputs_embeds' is not Div(x, 1.4142135)"),
    (_gelu_keras, "feeds '/model/mlp/gelu/add' (Add), not exactly one Add(erf, 1) with the Erf first"),
    (_gelu_by(2.0), "divides by 'sqrt_2', not by a constant sqrt(2)"),
    (_gelu_by(1.4142), "divides by 'sqrt_2', not by a constant sqrt(2)"),
    (_gelu_by(None, mul_by_inverse=True), "comes from '/model/mlp/gelu/Mul_0' (Mul)"),
    (_gelu_by(SQRT2, add_first=True), "not exactly one Add(erf, 1) with the Erf first"),
    (_gelu_by(SQRT2, half=0.25), "not exactly one Mul(x * (erf + 1), 0.5)"),
    (_gelu_by(SQRT2, fan_out=True), "feeds '/model/mlp/gelu/Add' (Add), '/model/mlp/extra/Add' (Add)"),
    (_gelu_by(SQRT2, other_x=True), "not exactly one Mul(x, erf + 1) with x = 'inputs_embeds'"),
], ids=["alone", "keras-order", "div-by-2", "sqrt2-rounded", "mul-by-inverse", "add-reversed", "quarter",
        "erf-fans-out", "mul-other-tensor"])
def test_erf_outside_torch_gelu_is_an_error(tmp_path, build, needle):
    g = G()
    r, report = lint_json(save(g.head(build(g, "inputs_embeds")), tmp_path))
    assert r.returncode == 1
    assert errors(report) == [("erf-outside-gelu", ERF)], report["findings"]
    finding = next(f for f in report["findings"] if f["rule"] == "erf-outside-gelu")
    assert finding["op"] == "Erf" and finding["section"] == "2"
    assert needle in finding["message"], finding["message"]
    # One error on the Erf says enough: no unknown-op warning beside it.
    assert ("unknown-op", ERF) not in warnings(report)
    text = run("lint", tmp_path / "model.onnx")
    assert text.returncode == 1
    assert "error [erf-outside-gelu, section 2] node '%s' (Erf): " % ERF in text.stdout


def test_full_sequence_logits(tmp_path):
    g = G()
    path = save(g.finish(g.linear("inputs_embeds", HID, VOCAB, "/model/lm_head"), [1, SEQ, VOCAB]), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 1
    assert errors(report) == [("output-not-last-position", "logits")]
    assert report["findings"][0]["kind"] == "output"


def test_unconsumed_input(tmp_path):
    g = G()
    g.inputs.append(vinfo("pe_q_cos", [1, SEQ, HD]))
    r, report = lint_json(save(g.head("inputs_embeds"), tmp_path))
    assert r.returncode == 1
    assert errors(report) == [("unconsumed-input", "pe_q_cos")]


def test_batch_and_opset(tmp_path):
    g = G(seq_shape=(2, SEQ, HID), opset=13)
    path = save(g.finish(g.slice("inputs_embeds", 1, SEQ - 1, SEQ, "/model/last/Slice"), [2, 1, HID]), tmp_path)
    r, report = lint_json(path)
    assert r.returncode == 1
    assert errors(report) == [("batch", "inputs_embeds")]
    assert ("opset", None) in warnings(report)


def test_text_output_format(tmp_path):
    g = G()
    e = g.node("Expand", ["inputs_embeds", g.init("shape", i64([1, SEQ, HID]))], "/model/gqa/Expand")
    path = save(g.head(e), tmp_path)
    r = run("lint", path)
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    # The layout `hef check` prints too: the file, its findings, the verdict.
    assert lines[0] == str(path)
    assert lines[1].startswith("  error [expand, section 2] node '/model/gqa/Expand' (Expand): ")
    assert lines[-1] == "FAIL: 1 error, 0 warnings"


# ---------------------------------------------------------------- (c) not ONNX / usage


def test_not_onnx_exits_3(tmp_path):
    bad = tmp_path / "notes.onnx"
    bad.write_text("this is not a protobuf\n")
    r = run("lint", bad)
    assert r.returncode == 3
    assert str(bad) in r.stderr


@pytest.mark.parametrize("content", [b"", b"\x08\x07"])
def test_protobuf_without_graph_exits_3(tmp_path, content):
    bad = tmp_path / "empty.onnx"
    bad.write_bytes(content)
    r = run("lint", bad)
    assert r.returncode == 3
    assert str(bad) in r.stderr


def test_missing_file_exits_3(tmp_path):
    r = run("lint", tmp_path / "absent.onnx")
    assert r.returncode == 3


def test_usage():
    assert run("lint").returncode == 2
    assert run("lint", "a.onnx", "b.onnx").returncode == 2
    assert run("lint", "a.onnx", "--frob").returncode == 2
    h = run("lint", "--help")
    assert h.returncode == 0 and "Usage: llm2hef lint" in h.stdout


# ---------------------------------------------------------------- structure (issue 12, class 9)


def test_missing_initializer_is_an_error(tmp_path):
    g = G()
    model = g.head("inputs_embeds")
    del model.graph.initializer[-1]  # the lm_head weight
    r, report = lint_json(save(model, tmp_path, check=False))
    assert ("missing-tensor", "/model/lm_head/MatMul") in errors(report)


def test_graph_cycle_is_an_error(tmp_path):
    g = G()
    a = g.node("Add", ["inputs_embeds", "/model/b/Add_output_0"], "/model/a/Add")
    g.node("Add", [a, "inputs_embeds"], "/model/b/Add")
    r, report = lint_json(save(g.head(a), tmp_path, check=False))
    assert any(rule == "graph-cycle" for rule, _ in errors(report)), report["findings"]


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd"])
def test_external_data_outside_the_folder_is_an_error(tmp_path, location):
    g = G()
    model = g.head("inputs_embeds")
    w = model.graph.initializer[-1]
    w.ClearField("raw_data")
    w.ClearField("float_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value=location)
    r, report = lint_json(save(model, tmp_path, check=False))
    found = [f for f in report["findings"] if f["rule"] == "external-data-location"]
    assert found and location in found[0]["message"]


def test_help_lists_every_rule_of_the_table_and_the_docs():
    """`lint --help` is generated from the rule table: each rule id once, and
    the same ids as docs/lint.md's rule tables."""
    r = run("lint", "--help")
    assert r.returncode == 0, r.stderr
    section = r.stdout.split("Rules (severity):\n", 1)[1].split("\n\n", 1)[0]
    in_help = [line.split()[0] for line in section.splitlines()]
    assert len(in_help) == len(set(in_help)), in_help
    doc = (Path(__file__).resolve().parents[3] / "docs" / "lint.md").read_text()
    in_docs = {line.split("`")[1] for line in doc.splitlines() if line.startswith("| `")}
    assert set(in_help) == in_docs
