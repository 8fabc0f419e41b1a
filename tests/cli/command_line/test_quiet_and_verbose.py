"""-q and -v (issue 28, section 4): every command and subcommand takes both;
-v tells what is done, -q prints errors only (no warnings, no summary) but
keeps the --json asked for, and the two together are a usage error."""
from __future__ import annotations

import json

import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run

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


def test_verbose_tells_what_is_done(tmp_path):
    out = tmp_path / "o"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--no-sync", "-v")
    assert r.returncode == 0, r.stderr
    assert "info: " in r.stderr and "adapter qwen2" in r.stderr and "matched by architectures" in r.stderr
    assert "info: wrote %s" % (out / "model.onnx") in r.stderr
    quiet = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "p", "--cache", 32, "--no-sync")
    assert "info:" not in quiet.stderr


def test_quiet_silences_warnings(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "o", "--cache", 32768, "--no-sync", "-q")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert run("inspect", FIXTURES / "qwen2-tiny", "-q", "-v").returncode == 2


def test_quiet_export_prints_nothing_but_json_when_asked(tmp_path):
    """-q is errors only: no summary on stdout and no resource-change notes on stderr (llama3-tiny's chat template
    is edited, so it has some); --json is the output asked for, so -q keeps it."""
    loud = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "loud", "--cache", 32, "--no-sync")
    assert loud.returncode == 0 and "resource changes" in loud.stderr and "exported llama3-tiny" in loud.stdout
    r = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "q", "--cache", 32, "--no-sync", "-q")
    assert r.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == ("", "")
    assert (tmp_path / "q" / "manifest.json").is_file()
    j = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "j", "--cache", 32, "--no-sync", "-q", "--json")
    assert j.returncode == 0 and j.stderr == "" and json.loads(j.stdout)["cache_size"] == 32
