"""What `export` must refuse, with which exit status (the README's exit statuses:
usage errors, bad input and unsupported models are told apart, and a failed
run leaves nothing behind)."""
from __future__ import annotations

import pytest

from conftest import FIXTURES, FIXTURE_NAMES, fixture_info, run_llm2hef


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


def test_missing_cache_is_a_usage_error(tmp_path):
    out = tmp_path / "out"
    proc = run_llm2hef(["export", FIXTURES / "gpt2-tiny", "-o", out, "--prefill", 8], check=False)
    assert proc.returncode == 2, f"exit {proc.returncode}, expected 2 (usage)\n{proc.stdout}{proc.stderr}"
    assert not out.exists()
