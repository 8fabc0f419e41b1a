"""Rough edges a new user met (issue 28, section 4): each test runs the built
llm2hef the way the user did and fails on the code before the fix."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"


def run(*args, timeout=300):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def copy_fixture(tmp_path, name="qwen2-tiny", edit=None):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    if edit:
        cfg = json.loads((dst / "config.json").read_text())
        edit(cfg)
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def mask_limited_cache(heads):
    """The largest N with N * heads * N <= 2^31 (the attention mask)."""
    n = int((2 ** 31 / heads) ** 0.5)
    while (n + 1) * heads * (n + 1) <= 2 ** 31:
        n += 1
    while n * heads * n > 2 ** 31:
        n -= 1
    return n


# ---------------------------------------------------------------- 1. compile.py's calibration limit

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


# ---------------------------------------------------------------- 2. inspect exits as export would

def test_inspect_exits_as_export_when_export_would_stop(tmp_path):
    model = copy_fixture(tmp_path)
    (model / "tokenizer.json").unlink()
    r = run("inspect", model)
    assert "EXPORT WOULD STOP" in r.stdout
    e = run("export", model, "-o", tmp_path / "out", "--cache", 32)
    assert e.returncode == 3
    assert r.returncode == e.returncode
    rep = json.loads(run("inspect", model, "--json").stdout)
    assert rep["resources"]["exit_status"] == 3


# ---------------------------------------------------------------- 3. architectures no adapter can take

@pytest.mark.parametrize("edit,why", [
    (lambda c: c.update(architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=8,
                        num_experts_per_tok=2), "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=60),
     "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["MambaForCausalLM"], model_type="mamba", state_size=16),
     "state-space model, not a transformer decoder"),
])
def test_unsupported_kinds_are_told_why(tmp_path, edit, why):
    model = copy_fixture(tmp_path, edit=edit)
    for cmd in (["inspect", model], ["export", model, "-o", tmp_path / "out", "--cache", 32]):
        r = run(*cmd)
        assert r.returncode == 4, r.stderr
        assert why in r.stderr
        assert "pass --adapter" not in r.stderr and "force" not in r.stderr


def test_unknown_dense_architecture_still_gets_the_adapter_hint(tmp_path):
    model = copy_fixture(tmp_path, edit=lambda c: c.update(architectures=["FooForCausalLM"], model_type="foo"))
    r = run("inspect", model)
    assert r.returncode == 4
    assert "--adapter NAME to force one" in r.stderr


# ---------------------------------------------------------------- 4. command line

def test_command_typo_before_options_is_reported_first(tmp_path):
    r = run("exprot", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x")
    assert r.returncode == 2
    assert "unknown command 'exprot'" in r.stderr and "did you mean export" in r.stderr
    assert "unknown option" not in r.stderr


def test_conversion_errors_in_the_tools_words(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x", "--cache", "abc")
    assert r.returncode == 2
    assert "Could not convert" not in r.stderr
    assert "--cache: 'abc' is not a whole number (see llm2hef export --help)" in r.stderr
    r = run("inspect", FIXTURES / "qwen2-tiny", "--prefill", "1.5")
    assert r.returncode == 2 and "Could not convert" not in r.stderr
    assert "--prefill: '1.5' is not a whole number" in r.stderr


def test_export_help_shows_cache_and_prefill_optional():
    out = run("export", "--help").stdout
    assert out.splitlines()[0].startswith("Usage: llm2hef export MODEL_DIR -o OUT [--cache N] [--prefill P]")


def test_inspect_help_lists_adapter():
    out = run("inspect", "--help").stdout
    assert any(line.strip().startswith("--adapter NAME") for line in out.splitlines())


# ---------------------------------------------------------------- 5. -q / -v, --version

COMMANDS = [["adapters"], ["export"], ["inputs"], ["calibrate"], ["lint"], ["inspect"], ["package"], ["help"],
            ["har"], ["har", "inspect"], ["har", "fix"], ["har", "lines"],
            ["hef"], ["hef", "inspect"], ["hef", "check"], ["hef", "set-config"],
            ["registry"], ["registry", "search"], ["registry", "install"], ["registry", "list"],
            ["registry", "uninstall"], ["registry", "keys"], ["registry", "sign"], ["registry", "collect"],
            ["registry", "verify"], ["registry", "manifest"], ["registry", "index"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_quiet_and_verbose_on_every_command(cmd):
    for flag in ("-q", "-v", "--quiet", "--verbose"):
        r = run(*cmd, flag, timeout=60)
        assert "unknown option" not in r.stderr and "unexpected argument" not in r.stderr, (flag, r.stderr)


def test_quiet_and_verbose_run(tmp_path):
    for flag in ("-q", "-v"):
        r = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32, flag)
        assert r.returncode == 0, r.stderr
        assert run(flag, "adapters").returncode == 0


def test_quiet_silences_warnings(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "o", "--cache", 32768, "--no-sync", "-q")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert run("inspect", FIXTURES / "qwen2-tiny", "-q", "-v").returncode == 2


def test_unknown_option_lists_only_the_matching_adapters_options(tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "o", "--cache", 32, "--fooo", "1")
    assert r.returncode == 2
    assert "options of adapter gpt2" in r.stderr and "--gelu" in r.stderr
    assert "sliding-window" not in r.stderr and "(phi)" not in r.stderr


def test_adapters_verbose_still_lists_every_file():
    assert "considered" in run("adapters", "--verbose").stdout.lower() or \
        "loaded" in run("adapters", "-v").stdout


def test_version_prints_commit_and_sdk_fingerprint():
    r = run("--version")
    assert r.returncode == 0
    assert "(commit " in r.stdout
    assert "abi " in r.stdout and "build fingerprint" in r.stdout and "sdk-" in r.stdout
