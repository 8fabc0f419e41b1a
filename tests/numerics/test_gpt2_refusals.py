"""What `export` must refuse, with which exit status (the README's exit statuses:
usage errors, bad input and unsupported models are told apart, and a failed
run leaves nothing behind)."""
from __future__ import annotations

import json

import pytest

from conftest import FIXTURE_NAMES, FIXTURES, fixture_info, run_llm2hef


@pytest.mark.parametrize("fixture", FIXTURE_NAMES)
def test_cache_above_n_positions_is_refused(fixture, tmp_path):
    n_pos = fixture_info(fixture)["config"]["n_positions"]
    out = tmp_path / "out"
    proc = run_llm2hef(["export", FIXTURES / fixture, "-o", out, "--cache", n_pos + 1,
                        "--prefill", 8], check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 4, f"exit {proc.returncode}, expected 4 (unsupported)\n{text}"
    assert "n_positions" in text, text
    assert not out.exists(), "a refused export left its output folder behind"


def test_without_cache_export_and_inspect_take_the_same_default(tmp_path):
    """No --cache: the model's own limit (n_positions) capped at 2048, for
    export and inspect alike (issue 16: inspect used to default to 2048 and
    fail on GPT-2); no --prefill: 96, or the cache when smaller."""
    n_positions = json.loads((FIXTURES / "gpt2-tiny" / "config.json").read_text())["n_positions"]
    out = tmp_path / "out"
    run_llm2hef(["export", FIXTURES / "gpt2-tiny", "-o", out])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cache_size"] == min(n_positions, 2048)
    assert manifest["prefill"] == min(96, manifest["cache_size"])
    proc = run_llm2hef(["inspect", FIXTURES / "gpt2-tiny", "--json"])
    report = json.loads(proc.stdout)
    assert (report["cache_size"], report["prefill"]) == (manifest["cache_size"], manifest["prefill"])


def test_a_cache_beyond_the_positions_names_the_largest_that_works(tmp_path):
    out = tmp_path / "out"
    proc = run_llm2hef(["export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 128], check=False)
    assert proc.returncode == 4, proc.stderr
    assert "n_positions': GPT-2 has learned positions only for 0..63" in proc.stderr
    assert "--cache 128 is too large, the largest exact cache is 64 (pass --cache 64 or less)" in proc.stderr
    assert not out.exists()


