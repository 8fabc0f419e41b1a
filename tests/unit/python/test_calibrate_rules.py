"""Unit tests of calibrate.py's range statistics, plan rule and fake
quantization (core/src/dfc/calibrate.py, the script `export` writes), on
synthetic tensors with planted outliers. No export, no llm2hef binary."""
from __future__ import annotations

import argparse
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


PRODUCERS = {"residual": dict(onnx_node="/model/layers.0/mlp_residual/Add", op_type="Add"),
             "swiglu": dict(onnx_node="/model/layers.0/mlp/swiglu/Mul", op_type="Mul"),
             "norm_out": dict(onnx_node="/model/layers.0/input_layernorm/Mul_1", op_type="Mul")}


def test_plan_raises_producer_and_consumers_together():
    tensors, convs, _ = synthetic_model()
    lines, dropped, spent, unraised = cal.make_plan(tensors, convs, PRODUCERS, [], 32)
    modes = {line["onnx_node"]: line["precision_mode"] for line in lines}
    assert modes == {
        "/model/layers.0/mlp/swiglu/Mul": "a16_w16",  # the producer of the 16-bit input, with its consumers
        "/model/layers.0/mlp/down_proj/MatMul": "a16_w4_a16",  # 4-bit weights kept (Hailo's recipe's mode)
        "/model/layers.0/attn/q/rope/rotate_half/MatMul": "a16_w16",  # 8-bit weights on a 16-bit input
        "/model/layers.0/mlp_residual/Add": "a16_w16",
    }
    # One byte per 16-bit activation value; the constant matrix's weights go from 8 to 16 bits.
    assert not dropped and not unraised and spent == 1000 + 1000 + 1000 + 1000 + 64
    assert all(line["reason"] for line in lines)


def test_a_tensor_whose_producer_cannot_be_raised_stays_8_bit_and_is_listed():
    tensors, convs, _ = synthetic_model()
    producers = {k: v for k, v in PRODUCERS.items() if k != "swiglu"}
    lines, _, _, unraised = cal.make_plan(tensors, convs, producers, [], 32)
    assert [u["tensor"] for u in unraised] == ["swiglu"]
    assert "/model/layers.0/mlp/down_proj/MatMul" not in {line["onnx_node"] for line in lines}


def test_plan_starts_from_the_base_lines_and_raises_chosen_weight_groups():
    tensors, convs, _ = synthetic_model()
    base = [dict(onnx_node="/model/layers.0/attn/o_proj/MatMul", op_type="MatMul", precision_mode="a8_w4",
                 reason="recipe", weight_group_size=128)]
    lines, _, _, _ = cal.make_plan(tensors, convs, PRODUCERS, base, 32)
    o_proj = next(line for line in lines if line["onnx_node"] == "/model/layers.0/attn/o_proj/MatMul")
    assert o_proj["precision_mode"] == "a8_w4" and o_proj["weight_group_size"] == 128 and o_proj["extra_bytes"] == 0
    lines, _, spent, _ = cal.make_plan(tensors, convs, PRODUCERS, base, 32,
                                       ["/model/layers.*/attn/o_proj/MatMul", "/model/layers.*/mlp/down_proj/MatMul"])
    modes = {line["onnx_node"]: line for line in lines}
    assert modes["/model/layers.0/attn/o_proj/MatMul"]["precision_mode"] == "a8_w8"
    assert "weight_group_size" not in modes["/model/layers.0/attn/o_proj/MatMul"]  # groups are for 4-bit weights
    assert modes["/model/layers.0/mlp/down_proj/MatMul"]["precision_mode"] == "a16_w16"
    # o_proj 4 -> 8 bits (32 bytes), down_proj 4 -> 16 bits (96) and its 16-bit input (1000).
    assert modes["/model/layers.0/attn/o_proj/MatMul"]["extra_bytes"] == 32
    assert modes["/model/layers.0/mlp/down_proj/MatMul"]["extra_bytes"] == 1000 + 96


def test_budget_keeps_the_most_severe_lines():
    tensors, convs, _ = synthetic_model()
    lines, dropped, spent, _ = cal.make_plan(tensors, convs, PRODUCERS, [], 32,
                                             ["/model/layers.*/attn/o_proj/MatMul"], budget_bytes=4064)
    assert spent <= 4064
    assert [d["onnx_node"] for d in dropped] == ["/model/layers.0/attn/o_proj/MatMul"]  # chosen for cost: least severe
    lines, dropped, spent, _ = cal.make_plan(tensors, convs, PRODUCERS, [], 32, budget_bytes=0)
    assert lines == [] and spent == 0 and len(dropped) == 4


# --------------------------------------------------------------------------- Hailo's recipe by role
def tiny_decoder():
    """x -> norm -> gate/up -> SiLU(gate)*up -> down -> residual Add -> lm_head: the roles by graph shape."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = {n: numpy_helper.from_array(rng.normal(size=shape).astype(np.float32), n)
         for n, shape in (("Wg", (256, 512)), ("Wu", (256, 512)), ("Wd", (512, 256)), ("Wh", (256, 100)))}
    nodes = [helper.make_node("MatMul", ["x", "Wg"], ["g"], name="/l0/gate/MatMul"),
             helper.make_node("MatMul", ["x", "Wu"], ["u"], name="/l0/up/MatMul"),
             helper.make_node("Sigmoid", ["g"], ["sg"], name="/l0/act/Sigmoid"),
             helper.make_node("Mul", ["g", "sg"], ["silu"], name="/l0/act/Mul"),
             helper.make_node("Mul", ["silu", "u"], ["prod"], name="/l0/product/Mul"),
             helper.make_node("MatMul", ["prod", "Wd"], ["d"], name="/l0/down/MatMul"),
             helper.make_node("Add", ["x", "d"], ["r"], name="/l0/residual/Add"),
             helper.make_node("MatMul", ["r", "Wh"], ["logits"], name="/head/MatMul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 256])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4, 100])], list(w.values()))
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    convs = [dict(onnx_node=n.name, input=n.input[0], weight=n.input[1], compressible=True,
                  weight_elements=int(np.prod(w[n.input[1]].dims)), rows=int(w[n.input[1]].dims[0]),
                  group=n.name) for n in nodes if n.op_type == "MatMul"]
    return model, convs


def test_roles_come_from_the_graph_not_the_names():
    model, convs = tiny_decoder()
    roles, products = cal.graph_roles(model, convs)
    assert roles == {"/l0/gate/MatMul": "block", "/l0/up/MatMul": "block", "/l0/down/MatMul": "down_proj",
                     "/head/MatMul": "lm_head"}
    assert products == [dict(onnx_node="/l0/product/Mul", output="prod", conv="/l0/down/MatMul")]


def test_recipe_lines_by_role():
    model, convs = tiny_decoder()
    roles, products = cal.graph_roles(model, convs)
    tensors = {"prod": dict(elements=2048), "r": dict(elements=1024), "x": dict(elements=1024)}
    lines = {line["onnx_node"]: line for line in cal.recipe_lines(
        convs, [dict(onnx_node="/l0/residual/Add", output="r")], products, roles, tensors)}
    assert lines["/l0/residual/Add"]["precision_mode"] == "a16_w16"
    assert lines["/l0/product/Mul"]["precision_mode"] == "a16_w16"
    assert lines["/l0/down/MatMul"]["precision_mode"] == "a16_w4_a16"
    assert lines["/l0/down/MatMul"]["weight_group_size"] == 128  # 512 input rows: a multiple of 128
    assert lines["/l0/gate/MatMul"] == dict(lines["/l0/gate/MatMul"], precision_mode="a8_w4", weight_group_size=128,
                                            extra_bytes=0)
    assert "/head/MatMul" not in lines  # the lm_head at a8_w4 with no group line: the default, no line
    convs[0]["rows"] = 576  # SmolLM2's width: no multiple of 128, the group line does not apply
    lines = {line["onnx_node"]: line for line in cal.recipe_lines(convs, [], products, roles, tensors)}
    assert "/l0/gate/MatMul" not in lines


def test_grouped_weights_scale_each_run_of_rows():
    rng = np.random.default_rng(8)
    w = rng.normal(size=(256, 3)).astype(np.float32)
    w[:128, 1] *= 1000  # a loud first group must not coarsen the second
    q = cal.quantize_weight(w, 4, 128)
    step = np.abs(w[128:, 1]).max() / 7
    assert np.abs(q[128:, 1] - w[128:, 1]).max() <= step / 2 + 1e-5
    per_channel = cal.quantize_weight(w, 4)
    assert np.abs(per_channel[128:, 1] - w[128:, 1]).max() > 3 * step
    np.testing.assert_array_equal(cal.quantize_weight(w[:100], 4, 128), cal.quantize_weight(w[:100], 4))


# --------------------------------------------------------------------------- decode speed and the weight choice
def test_decode_cost_counts_weights_at_their_precision_and_the_cache():
    convs = [dict(onnx_node="a", compressible=True, weight_elements=1000),
             dict(onnx_node="b", compressible=True, weight_elements=2000),
             dict(onnx_node="rot", compressible=False, weight_elements=100)]
    manifest = dict(dims=dict(layers=2, heads=4, head_dim=8), cache_size=16)
    cost = cal.DecodeCost(convs, manifest, (1e6, 2e6))
    kv = 2 * 2 * 4 * 8 * 16
    r = cost.row({})
    assert r["weight_bytes"] == 500 + 1000 + 100 and r["bytes_per_token"] == 1600 + kv
    assert r["tokens_per_s_low"] == pytest.approx(1e6 / (1600 + kv))
    assert r["tokens_per_s_high"] == pytest.approx(2e6 / (1600 + kv))
    r8 = cost.row({"b": dict(precision_mode="a16_w16")})
    assert r8["weight_bytes"] == 500 + 4000 + 100 and r8["tokens_per_s_high"] < r["tokens_per_s_high"]
    assert cal.DecodeCost(convs, manifest, None).row({})["tokens_per_s_high"] is None


class FakeProxy:
    """A proxy whose quality is 1 minus the planted loss of each 4-bit group."""

    def __init__(self, convs, loss):
        self.convs, self.loss = convs, loss

    def session(self, act=None, wbits=None):
        return wbits

    def logits(self, sess, tokens):
        return None

    def bits(self, plan, weights="plan", only_group=None):
        wb = {}
        for c in self.convs:
            line = plan.get(c["onnx_node"])
            mode = line["precision_mode"] if line else "a8_w4"
            if weights == "plan" or (weights == "group" and c["group"] == only_group):
                wb[c["group"]] = cal.weight_bits_of(mode)
        return {}, wb

    def judge(self, wbits, prompts, refs):
        cos = 1.0 - sum(loss for g, loss in self.loss.items() if wbits.get(g) == 4)
        return dict(mean_cosine=cos, top1_agreement=cos)


def test_weights_are_raised_cheapest_first_until_the_floor_is_met():
    tensors = {"t": dict(lo=-1.0, hi=1.0, p999=0.5, elements=10)}
    convs = [dict(onnx_node=n, input="t", compressible=True, weight_elements=size, group=n)
             for n, size in (("big", 8000), ("small", 1000), ("tiny", 500), ("harmless", 100))]
    # big loses most but costs 8x small; small buys more quality per byte.
    loss = {"big": 0.04, "small": 0.02, "tiny": 0.001, "harmless": 0.0}
    args = argparse.Namespace(sensitivity_prompts=1, max_weight_drop=0.025, min_cosine=None, min_top1=None,
                              min_tokens_per_s=None, min_levels=32)
    speed = cal.DecodeCost(convs, dict(dims=dict(layers=1, heads=1, head_dim=1), cache_size=1), (1e3, 2e3))
    raised, sensitivity, choice = cal.choose_weights(FakeProxy(convs, loss), convs, tensors, {}, [], {}, [[1]],
                                                     args, speed)
    # 4-bit everywhere: 0.939, floor 1 - 0.025. Quality per byte: small 0.02/500, big 0.04/4000, tiny 0.001/250:
    # small alone gives 0.959, with big 0.999 meets the floor; tiny is never paid for.
    assert raised == ["small", "big"] and choice["met"]
    assert [s["raised"] for s in choice["steps"]] == [[], ["small"], ["small", "big"]]
    assert "harmless" not in raised and sensitivity["groups"]["harmless"]["drop"] == 0
    # A tokens/s floor stops before the floor is met, and says so.
    args.min_tokens_per_s = speed.row({})["tokens_per_s_high"] * 0.99
    raised, _, choice = cal.choose_weights(FakeProxy(convs, loss), convs, tensors, {}, [], {}, [[1]], args, speed)
    assert not choice["met"] and "--min-tokens-per-s" in choice["stopped"]


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
    svg = cal.svg_picture(ranges, {"add1": "a16_w16", "add2": "a16_w16"}, {"r1": "add1", "r2": "add2"}, 32, 3,
                          recipe_nodes={"add1"})
    doc = xml.dom.minidom.parseString(svg)
    circles = doc.getElementsByTagName("circle")
    filled = [c for c in circles if c.getAttribute("fill") not in ("white",) and c.getElementsByTagName("title")]
    titles = [c.getElementsByTagName("title")[0].firstChild.data for c in filled]
    assert len(filled) == 2 and "16-bit in Hailo's recipe" in titles[0] and "beyond the recipe" in titles[1]
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
        p999 = a.percentile_abs(99.9)
        assert p999 / cal.BIN_RATIO <= b.percentile_abs(99.9) <= p999 * cal.BIN_RATIO


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
