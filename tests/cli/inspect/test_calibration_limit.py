"""compile.py's calibration limit (issue 28, section 4): the largest cache whose
attention mask compile.py can calibrate, told by `inspect` (warning and
JSON), by `export` (a warning naming the cache that works) and by `inputs`
(what compile.py runs, which refuses past it); and inspect sizes a
calibration sample and the DFC's RAM as compile.py's own memory check does."""
from __future__ import annotations

import json

import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


def mask_limited_cache(heads):
    """The largest N with N * heads * N <= 2^31 (the attention mask)."""
    n = int((2 ** 31 / heads) ** 0.5)
    while (n + 1) * heads * (n + 1) <= 2 ** 31:
        n += 1
    while n * heads * n > 2 ** 31:
        n -= 1
    return n


def test_limit_is_compile_pys_for_14_heads():
    assert mask_limited_cache(14) == 12385


def test_inspect_warns_past_the_calibration_limit():
    heads = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["num_attention_heads"]
    largest = mask_limited_cache(heads)
    r = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32768, "--json")
    assert r.returncode == 0, r.stderr
    cal = json.loads(r.stdout)["calibration"]
    assert cal["largest_cache"] == largest
    assert cal["fits"] is False
    assert str(largest) in cal["warning"] and "RAM" in cal["warning"]
    assert cal["ram_bytes"] > 16 * 10 ** 9
    text = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32768).stdout
    assert "warning: compile.py cannot calibrate cache 32768" in text
    assert "largest cache it can calibrate is %d" % largest in text
    # Within the limit: no warning.
    ok = json.loads(run("inspect", FIXTURES / "qwen2-tiny", "--cache", 64, "--json").stdout)["calibration"]
    assert ok["fits"] is True and "warning" not in ok


def test_export_warns_past_the_calibration_limit_and_inputs_refuses_there(tmp_path):
    heads = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["num_attention_heads"]
    largest = mask_limited_cache(heads)
    out = tmp_path / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32768, "--no-sync")
    assert r.returncode == 0, r.stderr
    assert "warning: compile.py cannot calibrate cache 32768" in r.stderr
    assert "--cache %d" % largest in r.stderr
    # What compile.py runs to calibrate refuses it, naming the same cache.
    r = run("inputs", out, "--tokens", "1,2,3", "-o", tmp_path / "x.npz")
    assert r.returncode == 3
    assert "largest cache whose inputs fit is %d" % largest in r.stderr
    # Within the limit, export is silent about it.
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "small", "--cache", 64, "--no-sync")
    assert r.returncode == 0 and "calibrate" not in r.stderr


@pytest.fixture(scope="module")
def small_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--prefill", 8, "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def test_inspect_sizes_calibration_as_compile_py_does(small_export):
    """inspect's sample size and DFC RAM are compile.py's own (its memory check)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("generated_compile", small_export / "compile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = json.loads((small_export / "manifest.json").read_text())
    rep = json.loads(run("inspect", FIXTURES / "qwen2-tiny", "--cache", m["cache_size"], "--prefill", m["prefill"],
                         "--json").stdout)
    cal = rep["calibration"]
    assert cal["sample_bytes"] == mod.calibration_sample_bytes()
    assert cal["ram_bytes"] == mod.DFC_MINIMUM_RAM + (cal["samples"] + 1) * mod.calibration_sample_bytes()
