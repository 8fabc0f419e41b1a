"""What `hef check` prints (issue 28, section 4): manifest findings have no
section rather than "section -", and a HEF that passes gets the next command
(`llm2hef package ...`), one that fails does not."""
from __future__ import annotations

import json

import pytest

import hef_writer as hw
from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


@pytest.fixture(scope="module")
def gpt2_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt2") / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16, "--no-progress",
            "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def write_hef(path, export, **over):
    path.write_bytes(hw.genai_hef(**hw.spec_from_export(export, **over)))
    return path


def test_manifest_findings_print_no_section_dash(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "other.hef", gpt2_export, hidden=96)
    r = run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json")
    assert r.returncode == 1
    assert "[manifest]" in r.stdout and "section -" not in r.stdout, r.stdout
    rep = json.loads(run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json", "--json").stdout)
    manifest = [f for f in rep["findings"] if f["rule"] == "manifest"]
    assert manifest and all(f["section"] != "-" for f in manifest)
    assert any(f["section"] is None for f in manifest)


def test_hef_check_success_prints_the_next_command(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    r = run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json")
    assert r.returncode == 0, r.stdout
    assert "next: llm2hef package %s --manifest %s" % (hef, gpt2_export / "manifest.json") in r.stdout
    assert "next:" not in run("hef", "check", write_hef(tmp_path / "bad.hef", gpt2_export, hidden=96),
                              "--manifest", gpt2_export / "manifest.json").stdout
