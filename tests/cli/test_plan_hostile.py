"""Hostile HARs and precision plans (issue 41, items 1 and 18).

`har lines` writes HN layer names into model-script lines, which have no
quoting: a name outside the DFC's own set must be refused, never written."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import har_fixtures as hf  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))


def run(*args, timeout=120):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


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
