"""The real binary's command surface: help, adapters, usage errors, inputs.

Uses the committed gpt2-tiny fixture for one export shared by the module.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from llm2hef_cli import FIXTURES, llm2hef

FIXTURE = FIXTURES / "gpt2-tiny"


def run(*args, env=None):
    return llm2hef(*args, env=env)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "tiny"
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--json")
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout)


@pytest.mark.parametrize("cmd", [[], ["adapters"], ["export"], ["inputs"]])
def test_help_exits_zero(cmd):
    r = run(*cmd, "--help")
    assert r.returncode == 0
    assert "Usage: llm2hef" in r.stdout


def test_no_command_is_a_usage_error():
    r = run()
    assert r.returncode == 2


def test_unknown_command():
    r = run("frobnicate")
    assert r.returncode == 2
    assert "unknown command 'frobnicate'" in r.stderr


def test_adapters_json_lists_gpt2():
    r = run("adapters", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    gpt2 = [a for a in report["adapters"] if a["name"] == "gpt2"]
    assert gpt2 and "GPT2LMHeadModel" in gpt2[0]["architectures"]
    assert report["conflicts"] == []


def test_adapters_verbose_lists_files_considered(tmp_path):
    junk = tmp_path / "junk.so"
    junk.write_text("not a library")
    r = run("--adapter-path", tmp_path, "adapters", "--verbose", "--json")
    report = json.loads(r.stdout)
    entry = [c for c in report["considered"] if c["file"].endswith("junk.so")]
    assert entry and entry[0]["status"] == "skipped"
    assert "not a shared library" in entry[0]["reason"]
    assert any(a["name"] == "gpt2" for a in report["adapters"])  # the host kept working



def test_world_writable_adapter_folder_is_refused(tmp_path):
    # A copy of the gpt2 adapter in a folder anyone may write to.
    r = run("adapters", "--json")
    src = Path([a for a in json.loads(r.stdout)["adapters"] if a["name"] == "gpt2"][0]["file"])
    unsafe = tmp_path / "unsafe"
    unsafe.mkdir()
    copy = unsafe / src.name
    copy.write_bytes(src.read_bytes())
    copy.chmod(0o755)
    unsafe.chmod(0o777)

    r = run("--adapter-path", unsafe, "adapters", "--verbose", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    entry = [c for c in report["considered"] if c["file"] == str(copy)]
    assert entry and entry[0]["status"] == "skipped"
    assert entry[0]["reason"] == (
        f"folder {unsafe} is world-writable; refusing to load adapters from it "
        "(pass --allow-unsafe-adapters to override)")
    assert all(a["file"] != str(copy) for a in report["adapters"])

    r = run("--adapter-path", unsafe, "--allow-unsafe-adapters", "adapters", "--verbose", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert [a["file"] for a in report["adapters"] if a["name"] == "gpt2"] == [str(copy)]
    unsafe.chmod(0o755)

def test_unknown_adapter_option_is_refused(tmp_path):
    r = run("export", FIXTURE, "-o", tmp_path / "o", "--cache", 16, "--prefill", 4, "--colour", "blue")
    assert r.returncode == 2
    assert "--colour" in r.stderr and "--gelu" in r.stderr
    assert not (tmp_path / "o").exists()


def test_bad_option_value_is_refused(tmp_path):
    r = run("export", FIXTURE, "-o", tmp_path / "o", "--cache", 16, "--prefill", 4, "--gelu", "erf")
    assert r.returncode == 2
    assert "sigmoid, tanh" in r.stderr


def test_prefill_larger_than_cache(tmp_path):
    r = run("export", FIXTURE, "-o", tmp_path / "o", "--cache", 16, "--prefill", 32)
    assert r.returncode == 2
    assert "--prefill" in r.stderr


def test_unknown_adapter_name(tmp_path):
    r = run("export", FIXTURE, "-o", tmp_path / "o", "--cache", 16, "--prefill", 4, "--adapter", "nope")
    assert r.returncode == 2
    assert "gpt2" in r.stderr  # lists what is available


def test_existing_output_needs_force(exported, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4)
    assert r.returncode == 2 and "--force" in r.stderr
    assert (out / "keep.txt").read_text() == "mine"
    # --force replaces only a previous export (a folder with a manifest.json).
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--force")
    assert r.returncode == 2 and "not a previous llm2hef export" in r.stderr
    assert (out / "keep.txt").read_text() == "mine"
    (out / "manifest.json").write_text("{}")
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--force")
    assert r.returncode == 0, r.stderr
    assert not (out / "keep.txt").exists() and (out / "model.onnx").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]  # no staging folder left


def test_export_writes_every_artifact(exported):
    out, manifest = exported
    for rel in manifest["files"]:
        assert (out / rel).is_file(), rel
    assert manifest["adapter"]["name"] == "gpt2"
    assert [i["dfc_layer"] for i in manifest["inputs"]] == ["input_layer%d" % k for k in range(1, 7)]
    alls = (out / "optimize.alls").read_text()
    assert "set_kv_cache_global_params(4, 16)" in alls
    # The lines choose the 4-bit weights, not the DFC's automatic compression
    # (docs/compile.md, "optimize.alls: compression_level").
    assert "model_optimization_flavor(compression_level=0, optimization_level=0)\n" in alls
    scope = manifest["dfc"]["scope"]
    compile_alls = (out / "compile.alls").read_text()
    # The groups come from the quantized HN (llm2hef har lines --for compile), not from export.
    assert "network_group" not in "".join(line for line in compile_alls.splitlines(True) if not line.startswith("#"))
    assert "har lines" in compile_alls and f"{scope}__tbt" in compile_alls
    compile_py = (out / "compile.py").read_text()
    compile(compile_py, "compile.py", "exec")  # valid Python
    assert os.access(out / "compile.py", os.X_OK)


def test_inputs_device_layout_tiles_per_head(exported, tmp_path):
    out, manifest = exported
    heads, t, n = manifest["dims"]["heads"], manifest["theta_length"], manifest["cache_size"]
    onnx_npz, dev_npz = tmp_path / "a.npz", tmp_path / "b.npz"
    assert run("inputs", out, "--tokens", "5,6,7", "-o", onnx_npz).returncode == 0
    assert run("inputs", out, "--tokens", "5,6,7", "-o", dev_npz, "--layout", "device").returncode == 0
    a, b = np.load(onnx_npz), np.load(dev_npz)
    assert a["pe_q_cos"].shape == (1, n, t)
    assert b["pe_q_cos"].shape == (1, n, t * heads)
    for h in range(heads):
        np.testing.assert_array_equal(b["pe_q_cos"][..., h * t:(h + 1) * t], a["pe_q_cos"])
    assert list(a["positions"][-3:]) == [0, 1, 2]


@pytest.mark.parametrize("tokens,needle", [("", "empty"), ("1,,2", "empty"), ("1,x", "integer"),
                                            ("999999", "outside the vocabulary"), (",".join(["1"] * 17), "exceed")])
def test_inputs_rejects_bad_prompts(exported, tmp_path, tokens, needle):
    out, _ = exported
    r = run("inputs", out, "--tokens", tokens, "-o", tmp_path / "x.npz")
    assert r.returncode == 2
    assert needle in r.stderr
    assert not (tmp_path / "x.npz").exists()


def test_inputs_on_a_folder_that_is_not_an_export(tmp_path):
    r = run("inputs", tmp_path, "--tokens", "1", "-o", tmp_path / "x.npz")
    assert r.returncode == 3
    assert "manifest.json" in r.stderr
