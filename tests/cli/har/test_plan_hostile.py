"""Hostile HARs and precision plans (issue 41, items 1 and 18).

`har lines` writes HN layer names into model-script lines, which have no
quoting: a name outside the DFC's own set must be refused, never written.
A plan's lines must land only on layer types their mode is written on. A
plan is bounded (file size, node-name length), its mapping linear, its byte
counts checked, and what it says is escaped before it reaches a terminal."""
from __future__ import annotations

import json

import pytest

import har_fixtures as hf  # noqa: E402
from llm2hef_cli import FIXTURES, llm2hef

GPT2 = FIXTURES / "gpt2-tiny"
INT64_MAX = 2**63 - 1


def run(*args, timeout=120):
    return llm2hef(*args, timeout=timeout)


def rename(hn, old, new):
    """The HN with layer `old` called `new`, on both ends of every edge."""
    layers = {}
    for name, layer in hn["layers"].items():
        for field in ("input", "output"):
            layer[field] = [new if n == old else n for n in layer[field]]
        layers[new if name == old else name] = layer
    hn["layers"] = layers
    order = hn["net_params"]["output_layers_order"]
    hn["net_params"]["output_layers_order"] = [new if n == old else n for n in order]
    return hn


def optimize_lines(tmp_path, hn, *extra):
    har = hf.write_har(tmp_path / "m.har", "tiny", hn)
    return har, run("har", "lines", har, "--for", "optimize", "--pe-width", hf.HD, *extra)


# ---------------------------------------------------------------- layer names in model-script lines

HOSTILE_NAMES = [
    "tiny/conv5], precision_mode=a16_w16)\nquantization_param([tiny/conv6",  # a second line
    "tiny/conv5)\nallocator_param(enable_auto_spatial_reshapes=True",
    "tiny/conv 5",
    "tiny/conv5,tiny/conv6",
    "tiny/conv5\x1b[2J",
    "tiny//conv5",
    "tiny/conv5/",
    "tiny/conv5#",
    "tiny/c\u00f6nv5",
]


def a_compressible_conv(hn):
    """A conv `har lines --for optimize` puts in its default line."""
    r_layers = [n for n, layer in hn["layers"].items() if layer["type"] == "conv"
                and all(s[-1] > hf.HD for s in layer["input_shapes"])]
    return r_layers[0]


@pytest.mark.parametrize("bad", HOSTILE_NAMES)
def test_optimize_lines_refuse_a_layer_name_a_model_script_cannot_hold(tmp_path, bad):
    hn, _ = hf.parsed_har()
    conv = a_compressible_conv(hn)
    har, r = optimize_lines(tmp_path, rename(hn, conv, bad))
    assert r.returncode == 3 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    # The HAR and its member are named, the name escaped: no raw escape or line break reaches the terminal.
    assert "%s: tiny.hn: layer '" % har in r.stderr and "not a name a model script can hold" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "precision_mode=a16_w16)\nquantization" not in r.stderr


def test_optimize_lines_keep_the_names_the_dfc_writes(tmp_path):
    hn, _ = hf.parsed_har()
    conv = a_compressible_conv(hn)
    _, r = optimize_lines(tmp_path, rename(hn, conv, "tiny/block3__conv2_B"))
    assert r.returncode == 0, r.stderr
    assert "tiny/block3__conv2_B" in r.stdout.splitlines()[0]


def test_compile_lines_refuse_a_cache_layer_name_a_model_script_cannot_hold(tmp_path):
    hn = hf.quantized_hn()
    bad = "cache_input_layer1, tf_rgb_to_hailo_rgb)\nperformance_param(compiler_optimization_level=max"
    for g in ("tiny__prefill", "tiny__tbt"):  # the same caches in both groups, as compile_lines wants
        rename(hn, g + "/cache_input_layer1", g + "/" + bad)
    har = hf.write_har(tmp_path / "q.har", "tiny", hn, None, state="quantized_model")
    r = run("har", "lines", har, "--for", "compile")
    assert r.returncode == 3 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    assert "tiny.hn: layer 'tiny__" in r.stderr and "\\x0aperformance_param" in r.stderr, r.stderr


# ---------------------------------------------------------------- plan modes on layer types

def plan_file(path, lines, **extra):
    doc = {"version": 1, "plan": {"default_mode": "a8_w4", "lines": lines}}
    doc.update(extra)
    path.write_text(json.dumps(doc))
    return path


def entry(node, mode, **extra):
    return {"onnx_node": node, "precision_mode": mode, "reason": "test", **extra}


def node_of_type(hn, type_, short=None):
    for name, layer in hn["layers"].items():
        if layer["type"] == type_ and (short is None or name.endswith("/" + short)):
            return name, layer["original_names"][0]
    raise AssertionError(type_)


@pytest.mark.parametrize("type_,short,mode", [
    ("softmax", None, "a16_w16"),
    ("matmul", None, "a16_w8"),
    ("input_layer", "input_layer2", "a16_w16"),  # the mask: only input_layer1 is documented at a16_w16
    ("input_layer", "input_layer1", "a8_w8"),
    ("ew_add", None, "a8_w8"),  # 8-bit modes are written on convs only
    ("slice", None, "a16_w16"),
    ("output_layer", None, "a16_w16"),
])
def test_a_plan_mode_on_a_layer_type_it_is_not_written_on_is_refused(tmp_path, type_, short, mode):
    hn, _ = hf.parsed_har()
    layer, node = node_of_type(hn, type_, short)
    plan = plan_file(tmp_path / "q.json", [entry(node, mode)])
    _, r = optimize_lines(tmp_path, hn, "--plan", plan)
    assert r.returncode == 3 and r.stdout == "", (r.returncode, r.stdout, r.stderr)
    said = "plan.lines[0] '%s' (%s) maps to %s, a layer of type %s;" % (node, mode, layer, type_)
    assert str(plan) in r.stderr and said in r.stderr, r.stderr
    assert "docs/quantization-gate.md" in r.stderr


def test_plan_modes_on_the_documented_layer_types_are_written(tmp_path):
    hn, _ = hf.parsed_har()
    emb, emb_node = node_of_type(hn, "input_layer", "input_layer1")
    add, add_node = node_of_type(hn, "ew_add")
    norm, norm_node = node_of_type(hn, "normalization")
    conv = a_compressible_conv(hn)
    plan = plan_file(tmp_path / "q.json", [entry(emb_node, "a16_w16"), entry(add_node, "a16_w16"),
                                           entry(norm_node, "a16_w8"),
                                           entry(hn["layers"][conv]["original_names"][0], "a8_w8")])
    _, r = optimize_lines(tmp_path, hn, "--plan", plan)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "quantization_param([%s, %s], precision_mode=a16_w16)" % (emb, add) in lines, lines
    assert "quantization_param([%s], precision_mode=a16_w8)" % norm in lines
    assert "quantization_param([%s], precision_mode=a8_w8)" % conv in lines


# ---------------------------------------------------------------- bounded plans

def test_a_plan_node_name_over_the_limit_is_refused(tmp_path):
    hn, _ = hf.parsed_har()
    plan = plan_file(tmp_path / "q.json", [entry("/model/" + "x" * 20000, "a16_w8")])
    _, r = optimize_lines(tmp_path, hn, "--plan", plan)
    assert r.returncode == 3, r.stderr
    assert "field 'plan.lines[0].onnx_node': 20007 bytes, over the limit of 1024" in r.stderr, r.stderr


def test_many_unmapped_entries_are_counted_and_the_first_listed(tmp_path):
    # 2000 unmapped names of 1000 bytes: each listed one costs a pass over
    # the HN's names and edit distances, so only the first 20 are listed (the
    # issue's 2000 names of 20 KB took 116 s and printed 40 MB).
    hn, _ = hf.parsed_har()
    lines = [entry("/model/layers.0/attn/o_proj/%04d/%s" % (i, "y" * 960), "a16_w8") for i in range(2000)]
    plan = plan_file(tmp_path / "q.json", lines)
    _, r = optimize_lines(tmp_path, hn, "--plan", plan)
    assert r.returncode == 3, r.stderr
    assert "2000 plan entries map to no layer" in r.stderr and "... and 1980 more" in r.stderr, r.stderr[-2000:]
    assert "plan.lines[19] '" in r.stderr and "plan.lines[20] '" not in r.stderr
    assert "closest: '/model/layers.0/attn/o_proj/MatMul'" in r.stderr


def test_a_plan_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    hn, _ = hf.parsed_har()
    plan = tmp_path / "q.json"
    with open(plan, "wb") as f:
        f.truncate((16 << 20) + 1)  # sparse: nothing is written, nothing may be read
    _, r = optimize_lines(tmp_path, hn, "--plan", plan)
    assert r.returncode == 3, r.stderr
    assert str(plan) in r.stderr and "exceed the limit of 16777216 bytes (16 MiB) for a quantization.json" \
        in r.stderr, r.stderr


# ---------------------------------------------------------------- inspect --plan

def budget(weight, activation):
    return {"extra_weight_bytes": weight, "extra_activation_bytes": activation, "weight_bytes_default": 1000}


@pytest.mark.parametrize("doc,needle", [
    ({"budget": budget(INT64_MAX, 1)},
     "fields 'budget.extra_weight_bytes' and 'budget.extra_activation_bytes' add up past 2^63 bytes"),
    ({"budget": budget(INT64_MAX - 10, 0)}, "field 'budget': the plan's %d extra bytes" % (INT64_MAX - 10)),
    ({"budget": budget(2**64, 0)}, "field 'budget.extra_weight_bytes': expected a whole, non-negative byte count"),
    ({"budget": budget(0, 0), "lines": [entry("/a", "a8_w8", extra_bytes=-1)]},
     "field 'plan.lines[0].extra_bytes': expected a whole, non-negative byte count"),
    ({"budget": budget(0, 0), "lines": [entry("/a", "a8_w8", extra_bytes=INT64_MAX),
                                        entry("/b", "a8_w8", extra_bytes=INT64_MAX)]},
     "field 'plan.lines[1].extra_bytes': the lines' extra_bytes add up past 2^63 bytes"),
    ({"budget": budget(0, 0), "model": ["not", "a", "name"]}, "field 'model': expected the name of the export"),
])
def test_inspect_plan_refuses_byte_counts_that_do_not_add_up(tmp_path, doc, needle):
    plan = plan_file(tmp_path / "q.json", doc.pop("lines", []), **doc)
    r = run("inspect", GPT2, "--plan", plan)
    assert r.returncode == 3 and str(plan) in r.stderr and needle in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert "-9.2" not in r.stdout


def test_inspect_plan_escapes_the_plans_model_name(tmp_path):
    # A plan for another model is refused (issue 40): the name it gives is
    # escaped in the refusal as anywhere else.
    model = "evil\x1b]0;owned\x07\nrewrites:\n  - fake"
    plan = plan_file(tmp_path / "q.json", [], budget=budget(100, 200), model=model)
    r = run("inspect", GPT2, "--cache", 32, "--plan", plan)
    assert r.returncode == 3, r.stderr
    assert "made for 'evil\\x1b]0;owned\\x07\\x0arewrites:\\x0a  - fake'" in r.stderr, r.stderr
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr
    # The plan's own name: accepted, and its cost added.
    plan = plan_file(tmp_path / "q.json", [], budget=budget(100, 200), model=GPT2.name)
    js = json.loads(run("inspect", GPT2, "--cache", 32, "--plan", plan, "--json").stdout)
    assert js["precision_plan"]["model"] == GPT2.name
    assert js["precision_plan"]["total_bytes"] == js["memory"]["total_bytes"] + 300
