"""Unit tests of calibrate.py's range statistics, plan rule and fake
quantization (core/src/dfc/calibrate.py, the script `export` writes), on
synthetic tensors with planted outliers. No export, no llm2hef binary."""
from __future__ import annotations

import importlib.util
import math
import xml.dom.minidom
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("calibrate", REPO / "core" / "src" / "dfc" / "calibrate.py")
cal = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cal)


def stats_of(chunks, token_axis=1, channels=None):
    s = cal.RangeStats(channels)
    for p, x in enumerate(chunks):
        s.update(x, token_axis, dict(prompt=p))
    return s


# --------------------------------------------------------------------------- range statistics
def test_min_max_and_count_over_prompts():
    rng = np.random.default_rng(0)
    chunks = [rng.normal(size=(1, n, 16)).astype(np.float32) for n in (5, 9, 3)]
    s = stats_of(chunks)
    allv = np.concatenate([c.reshape(-1) for c in chunks])
    assert s.count == allv.size
    assert s.min == pytest.approx(float(allv.min()))
    assert s.max == pytest.approx(float(allv.max()))


@pytest.mark.parametrize("q", [50.0, 99.0, 99.9])
def test_percentile_within_one_bin_of_numpy(q):
    rng = np.random.default_rng(1)
    chunks = [np.abs(rng.standard_cauchy(size=(1, 64, 32))).astype(np.float32) * s for s in (1e-3, 1.0, 30.0)]
    s = stats_of(chunks)
    want = float(np.percentile(np.concatenate([np.abs(c).reshape(-1) for c in chunks]), q, method="inverted_cdf"))
    got = s.percentile_abs(q)
    assert want <= got <= want * cal.BIN_RATIO * 1.0001, (q, want, got)


def test_percentile_of_zeros_and_empty():
    assert cal.RangeStats().percentile_abs(99.9) == 0.0
    s = stats_of([np.zeros((1, 4, 4), np.float32)])
    assert s.percentile_abs(99.9) <= 2.0 ** cal.LOG2_LOW


def test_planted_outlier_found_at_its_token_and_channel():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(1, 20, 64)).astype(np.float32)
    x[0, 3, 17] = 20000.0  # a massive activation on token 3, channel 17
    y = rng.normal(size=(1, 12, 64)).astype(np.float32)
    y[0, 7, 40] = -900.0
    s = stats_of([y, x], channels=64)
    assert s.max == 20000.0 and s.max_at["prompt"] == 1 and s.max_at["token"] == 3 and s.max_at["channel"] == [17]
    assert s.min == -900.0 and s.min_at["prompt"] == 0 and s.min_at["token"] == 7 and s.min_at["channel"] == [40]
    assert int(np.argmax(s.channel_max_abs)) == 17
    # The outlier is one value in 1,984: the 99.9th percentile stays with the ordinary values.
    assert s.percentile_abs(99.9) < 5.0


def test_location_on_attention_shaped_tensor_and_token_ids():
    x = np.zeros((1, 4, 6, 6), np.float32)  # [1, heads, queries, keys], token axis 2
    x[0, 2, 5, 1] = 9.0
    s = cal.RangeStats()
    s.update(x, 2, dict(prompt=0, token_ids=[10, 11, 12, 13, 14, 15]))
    assert s.max_at == dict(prompt=0, token=5, token_id=15, channel=[2, 1])


def test_non_finite_activation_refused():
    with pytest.raises(ValueError, match="non-finite"):
        stats_of([np.array([[[1.0, np.inf]]], np.float32)])


# --------------------------------------------------------------------------- the 8-bit rule
def test_grid_levels():
    # [-1, 1] over 255 steps: a 99.9th percentile of 1 spans 127.5 steps.
    assert cal.grid_levels(-1.0, 1.0, 1.0, 8) == pytest.approx(127.5)
    # The range always holds zero: [2, 4] is a grid over [0, 4].
    assert cal.grid_levels(2.0, 4.0, 4.0, 8) == pytest.approx(255.0)
    assert cal.grid_levels(0.0, 0.0, 0.0, 8) == math.inf
    assert cal.grid_levels(-1.0, 1.0, 1.0, 16) == pytest.approx(32767.5)


def test_outlier_tensor_needs_16_bits_and_ordinary_one_does_not():
    rng = np.random.default_rng(3)
    ordinary = rng.normal(size=(1, 200, 64)).astype(np.float32)
    massive = ordinary.copy()
    massive[0, 0, 5] = 20000.0  # as SmolLM2's residual stream on its first token
    for x, want in ((ordinary, 8), (massive, 16)):
        s = stats_of([x])
        assert cal.activation_bits_needed(s.min, s.max, s.percentile_abs(99.9), 32) == want


def test_rule_threshold_is_min_levels():
    # max/p99.9 = 10 on a symmetric-ish range: 255 / 10 = 25.5 steps; needs 16 at 32, fine at 16.
    assert cal.activation_bits_needed(0.0, 10.0, 1.0, 32) == 16
    assert cal.activation_bits_needed(0.0, 10.0, 1.0, 16) == 8


# --------------------------------------------------------------------------- the plan
def synthetic_model():
    rng = np.random.default_rng(4)
    ok = rng.normal(size=(1, 1000, 8))  # 8,000 values: one outlier stays above the 99.9th percentile
    bad = ok.copy()
    bad[0, 0, 0] = 5e4
    tensors = {}
    for name, x in (("norm_out", ok), ("swiglu", bad), ("residual", bad), ("attn_out", ok)):
        s = stats_of([x.astype(np.float32)])
        tensors[name] = dict(lo=s.min, hi=s.max, p999=s.percentile_abs(99.9), elements=1000)
    convs = [
        dict(onnx_node="/model/layers.0/attn/q_proj/MatMul", input="norm_out", compressible=True,
             weight_elements=64, group="/model/layers.*/attn/q_proj/MatMul"),
        dict(onnx_node="/model/layers.0/attn/o_proj/MatMul", input="attn_out", compressible=True,
             weight_elements=64, group="/model/layers.*/attn/o_proj/MatMul"),
        dict(onnx_node="/model/layers.0/mlp/down_proj/MatMul", input="swiglu", compressible=True,
             weight_elements=64, group="/model/layers.*/mlp/down_proj/MatMul"),
        dict(onnx_node="/model/layers.0/attn/q/rope/rotate_half/MatMul", input="swiglu", compressible=False,
             weight_elements=64, group="/model/layers.*/attn/q/rope/rotate_half/MatMul"),
    ]
    adds = [dict(onnx_node="/model/layers.0/mlp_residual/Add", output="residual")]
    return tensors, convs, adds


def test_plan_widens_the_consumers_of_outlier_tensors():
    tensors, convs, adds = synthetic_model()
    lines, dropped, spent = cal.make_plan(tensors, convs, adds, 32, {}, 0.01)
    modes = {line["onnx_node"]: line["precision_mode"] for line in lines}
    assert modes == {
        # 16-bit activations come with 8-bit weights (the a16 modes public Hailo scripts use).
        "/model/layers.0/mlp/down_proj/MatMul": "a16_w8",
        "/model/layers.0/attn/q/rope/rotate_half/MatMul": "a16_w8",  # not compressible: stays 8-bit weights
        "/model/layers.0/mlp_residual/Add": "a16_w16",
    }
    assert not dropped and spent == 3000 + 32  # down_proj's weights half a byte more each
    assert all(line["reason"] for line in lines)


def test_plan_gives_8_bit_weights_to_groups_the_proxy_finds_sensitive():
    tensors, convs, adds = synthetic_model()
    drops = {"/model/layers.*/attn/o_proj/MatMul": 0.05, "/model/layers.*/attn/q_proj/MatMul": 0.002,
             "/model/layers.*/mlp/down_proj/MatMul": 0.2}
    lines, _, spent = cal.make_plan(tensors, convs, adds, 32, drops, 0.01)
    modes = {line["onnx_node"]: line["precision_mode"] for line in lines}
    assert modes["/model/layers.0/attn/o_proj/MatMul"] == "a8_w8"
    assert modes["/model/layers.0/mlp/down_proj/MatMul"] == "a16_w8"
    assert "/model/layers.0/attn/q_proj/MatMul" not in modes  # below the threshold
    assert spent == 1000 + (1000 + 32) + 1000 + 32  # activations one more byte each, weights half a byte more


def test_budget_keeps_the_most_severe_lines():
    tensors, convs, adds = synthetic_model()
    drops = {"/model/layers.*/attn/o_proj/MatMul": 0.011}  # barely over: least severe
    lines, dropped, spent = cal.make_plan(tensors, convs, adds, 32, drops, 0.01, budget_bytes=3032)
    assert spent <= 3032
    assert [d["onnx_node"] for d in dropped] == ["/model/layers.0/attn/o_proj/MatMul"]
    lines, dropped, spent = cal.make_plan(tensors, convs, adds, 32, drops, 0.01, budget_bytes=0)
    assert lines == [] and spent == 0 and len(dropped) == 4


def test_weight_group_names_a_role_across_layers():
    assert cal.weight_group("/model/layers.12/mlp/down_proj/MatMul") == "/model/layers.*/mlp/down_proj/MatMul"
    assert cal.weight_group("/model/lm_head/MatMul") == "/model/lm_head/MatMul"


# --------------------------------------------------------------------------- weights and fake quantization
def test_quantize_weight_per_output_channel():
    rng = np.random.default_rng(5)
    w = rng.normal(size=(32, 4)).astype(np.float32)
    w[:, 2] *= 100  # one loud output channel must not coarsen the others
    for bits in (4, 8):
        q = cal.quantize_weight(w, bits)
        levels = 2 ** (bits - 1) - 1
        for j in range(4):
            step = np.abs(w[:, j]).max() / levels
            assert np.abs(q[:, j] - w[:, j]).max() <= step / 2 + 1e-6
            assert len(np.unique(q[:, j])) <= 2 * levels + 1
    e4 = cal.weight_output_error(w, np.ones(32), 4)
    e8 = cal.weight_output_error(w, np.ones(32), 8)
    assert 0 < e8 < e4 < 0.2


def test_fake_quant_model_matches_numpy():
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["h"], name="/relu"),
                           helper.make_node("Neg", ["h"], ["y"], name="/neg")], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    data = np.array([[0.0, 0.013, 0.5, 1.0, 3.9, 2.2]], np.float32)
    for bits in (8, 16):
        fq = cal.fake_quant_model(m, {"h": (0.0, 4.0, bits), "x": (-1.0, 4.0, bits)})
        onnx.checker.check_model(fq)
        got = ort.InferenceSession(fq.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": data})[0]
        levels = 2 ** bits - 1

        def fq_np(v, lo, hi):
            scale = (hi - lo) / levels
            zp = round(-lo / scale)
            return (np.clip(np.round(v / scale) + zp, 0, levels) - zp) * scale

        want = -fq_np(np.maximum(fq_np(data, -1.0, 4.0), 0), 0.0, 4.0)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
        if bits == 8:
            assert got[0, 1] != -0.013  # 8 bits over [0, 4] cannot hold 0.013


def test_svg_is_well_formed_and_marks_the_plan():
    ranges = [dict(tensor="r%d" % i, kind="residual", layer=i, max_abs=2e4 if i else 3.0, p999_abs=100.0 if i else 1.0,
                   consumer_convs=[]) for i in range(3)]
    svg = cal.svg_picture(ranges, {"add1"}, {"r1": "add1", "r2": "add2"}, 32, 3)
    doc = xml.dom.minidom.parseString(svg)
    circles = doc.getElementsByTagName("circle")
    filled = [c for c in circles if c.getAttribute("fill") not in ("white",) and c.getElementsByTagName("title")]
    assert len(filled) == 1 and "16-bit in the plan" in filled[0].getElementsByTagName("title")[0].firstChild.data
    assert "not a prediction" in svg


# --------------------------------------------------------------------------- statistics inside the graph
def test_statistics_reduced_in_the_graph_match_numpy():
    """stats_model (issue 39: one run per prompt, nothing big fetched) gives
    what RangeStats.update gives on the fetched tensors: the same extremes at
    the same places, the same per-channel figures, the 99.9th percentile
    within one bin, over the prompt's real rows only."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    seq, ch = 12, 8
    graph = helper.make_graph(
        [helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["x", "xt"], ["scores"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, ch])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, seq, seq])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    tensors = {"x": dict(shape=[1, seq, ch], token_axis=1), "scores": dict(shape=[1, seq, seq], token_axis=1)}
    reduced, outputs = cal.stats_model(model, tensors)
    onnx.checker.check_model(reduced)
    sess = ort.InferenceSession(reduced.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(7)
    want = {n: cal.RangeStats(t["shape"][-1]) for n, t in tensors.items()}
    got = {n: cal.RangeStats(t["shape"][-1]) for n, t in tensors.items()}
    names = [o for n in tensors for o in outputs[n].values()]
    for p, n in enumerate((5, 12, 1)):
        x = rng.normal(size=(1, seq, ch)).astype(np.float32) * 3
        x[0, :seq - n] = 1e6  # padding rows: never counted
        x[0, seq - 1, 3] = -250.0 * (p + 1)
        first = seq - n
        feeds = {"x": x, cal.FIRST_ROW_INPUT: np.array([first], np.int64)}
        res = dict(zip(names, sess.run(names, feeds)))
        full = {"x": x, "scores": x @ x.transpose(0, 2, 1)}
        for name, t in tensors.items():
            rows = list(t["shape"])
            rows[1] = n
            got[name].add_reduced({k: res[o] for k, o in outputs[name].items()}, rows, 1, dict(prompt=p))
            want[name].update(full[name][:, first:], 1, dict(prompt=p))
    for name in tensors:
        a, b = want[name], got[name]
        assert (a.count, a.min, a.max, a.min_at, a.max_at) == (b.count, b.min, b.max, b.min_at, b.max_at), name
        np.testing.assert_allclose(a.channel_max_abs, b.channel_max_abs, rtol=1e-6)
        np.testing.assert_allclose(a.channel_sum_sq, b.channel_sum_sq, rtol=1e-5)
        assert a.channel_rows == b.channel_rows
        assert abs(int(np.sum(np.abs(a.hist - b.hist)))) <= 2, name  # a value on a bin edge may move by one bin
        assert a.percentile_abs(99.9) / cal.BIN_RATIO <= b.percentile_abs(99.9) <= a.percentile_abs(99.9) * cal.BIN_RATIO


def test_non_finite_activation_found_in_the_graph():
    import onnxruntime as ort
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Log", ["x"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    tensors = {"y": dict(shape=[1, 4, 2], token_axis=1)}
    reduced, outputs = cal.stats_model(model, tensors)
    sess = ort.InferenceSession(reduced.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.ones((1, 4, 2), np.float32)
    x[0, 2, 1] = -1.0  # log(-1) = NaN on the third real row
    names = list(outputs["y"].values())
    res = dict(zip(outputs["y"], sess.run(names, {"x": x, cal.FIRST_ROW_INPUT: np.array([0], np.int64)})))
    with pytest.raises(cal.NonFinite) as e:
        cal.RangeStats(2).add_reduced(res, [1, 4, 2], 1, dict(prompt=3))
    assert e.value.where["prompt"] == 3 and e.value.where["token"] == 2 and e.value.where["channel"] == [1]
