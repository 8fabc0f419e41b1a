"""The newcomer's walk-through (issue 16): with the README as the only guide,
`llm2hef inspect MODEL` with no options and `llm2hef export MODEL -o OUT`
with only -o, on every model fixture (transformers 4 and 5 layouts, every
adapter family), give an inspect report and a DFC kit holding every file the
README says export writes. Inspect and export must agree on the defaults they
pick. The file list is read from README.md, not repeated here, so the test
fails when the README and the kit drift apart. The real binary; tiny
fixtures, so the whole walk takes seconds."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from llm2hef_cli import BIN, FIXTURES, REPO

MODEL_FIXTURES = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())


def readme_kit_files() -> list[str]:
    """The files of README's "What `export` writes" table, and every OUT/<file>
    the README tells the user to run or pass."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index("What `export` writes")
    table = []
    for line in text[start:].splitlines()[1:]:
        if table and not line.startswith("|"):
            break
        if line.startswith("|"):
            table.append(line)
    files = []
    for row in table[2:]:  # past the header and its rule
        first_cell = row.split("|")[1]
        files += re.findall(r"`([A-Za-z0-9_./-]+)`", first_cell)
    files += re.findall(r"\bOUT/([A-Za-z0-9_./-]*[A-Za-z0-9_])", text)
    return sorted(set(files))


def test_the_readme_names_the_kit_files():
    files = readme_kit_files()
    # What the walk below checks must be more than a handful of names.
    for expected in ("model.onnx", "resources/hailo-config.json", "compile.py", "manifest.json"):
        assert expected in files, files


@pytest.mark.parametrize("fixture", MODEL_FIXTURES)
def test_inspect_then_export_with_defaults(fixture, tmp_path):
    model = FIXTURES / fixture
    inspect = subprocess.run([str(BIN), "inspect", str(model)], capture_output=True, text=True, timeout=300)
    assert inspect.returncode == 0, inspect.stderr
    report_lines = inspect.stdout.splitlines()
    for label in ("adapter", "parameters", "cache", "total"):
        assert any(line.startswith(label) for line in report_lines), (label, inspect.stdout)
    assert "REFUSED" not in inspect.stdout

    out = tmp_path / "kit"
    export = subprocess.run([str(BIN), "export", str(model), "-o", str(out)], capture_output=True, text=True,
                            timeout=600)
    assert export.returncode == 0, export.stderr
    missing = [f for f in readme_kit_files() if not (out / f).is_file()]
    assert not missing, f"README names {missing}, which export did not write"
    assert "next: llm2hef calibrate" in export.stdout and "then: python" in export.stdout

    # The defaults agree: inspect sized what export wrote.
    as_json = subprocess.run([str(BIN), "inspect", str(model), "--json"], capture_output=True, text=True,
                             timeout=300)
    assert as_json.returncode == 0, as_json.stderr
    inspected = json.loads(as_json.stdout)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cache_size"] == inspected["cache_size"]
    assert manifest["prefill"] == inspected["prefill"]
    assert manifest["adapter"]["name"] == inspected["adapter"]["name"]
