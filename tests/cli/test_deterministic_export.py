"""Two exports of the same checkpoint with the same options are byte-identical,
file by file (issue 13: graphs are deterministic by construction).

Every model fixture is exported twice by separate processes into different
folders; the file lists and every file's bytes must match.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
MODEL_FIXTURES = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())
CASES = [(name, []) for name in MODEL_FIXTURES] + [
    (name, ["--gelu", "tanh"]) for name in MODEL_FIXTURES if name.startswith("gpt2")
]


def export(fixture: str, out: Path, extra: list[str]) -> None:
    r = subprocess.run(
        [str(BIN), "export", str(FIXTURES / fixture), "-o", str(out), "--cache", "32", "--prefill", "8",
         "--name", "fx", "--no-progress", *extra],
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_there_are_fixtures_of_every_first_party_family():
    families = {name.split("-")[0].rstrip("0123456789") for name in MODEL_FIXTURES}
    assert {"gpt", "llama", "qwen", "smollm", "lfm"} <= families, MODEL_FIXTURES


@pytest.mark.parametrize("fixture,extra", CASES, ids=[f"{n}{''.join(e)}" for n, e in CASES])
def test_two_exports_are_byte_identical(tmp_path, fixture, extra):
    first, second = tmp_path / "first", tmp_path / "second"
    export(fixture, first, extra)
    export(fixture, second, extra)
    a, b = files(first), files(second)
    assert sorted(a) == sorted(b)
    assert "model.onnx" in a and "model.onnx.data" in a
    differing = [name for name in a if a[name] != b[name]]
    assert differing == [], f"{fixture}: files differ between two exports: {differing}"


def test_no_sync_changes_nothing_but_the_flush(tmp_path):
    """`--no-sync` skips the fsyncs before the final rename; what is written is
    the same, byte for byte."""
    durable, quick = tmp_path / "durable", tmp_path / "quick"
    export("llama3-tiny", durable, [])
    export("llama3-tiny", quick, ["--no-sync"])
    assert files(durable) == files(quick)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "a staging folder was left behind"
