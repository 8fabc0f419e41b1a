"""Every test source the text names exists.

Docs, comments and scripts point the reader at the test that checks a claim
("`tests/cli/hef/test_hef.py` covers ..."). When tests move (issue 38 grouped
tests/cli by command and moved the checks of the tree here), such a pointer
left behind names nothing. This reads every text file of the tree and checks
each `tests/<folder>/...` path to a Python or C++ source. Static: reads the
sources, needs no binary.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Where the text that names tests lives; build trees and the downloaded test
# data are not the project's text.
ROOTS = ["README.md", "CONTRIBUTING.md", "docs", "core", "sdk", "adapters", "plugins", "registry", "tools", "tests",
         "examples", "cmake", ".ci", "CMakeLists.txt"]
SKIP = {".real-tokenizers", ".real-models", "__pycache__"}
TEXT = {".md", ".py", ".cpp", ".hpp", ".h", ".txt", ".sh", ".cmake", ".in", ".toml", ".yaml", ""}
# A path from the repository root to a source in one of this project's test
# folders: not one inside a build tree (build/tests/cli/...), nor another
# project's tests/ (llama.cpp's tests/test-chat-template.cpp).
FOLDERS = "cli|architecture|numerics|unit|plugins|registry|install|fuzz|standins|fixtures"
PATH = re.compile(r"(?<![\w/.-])tests/(?:%s)/[\w./-]*?\.(?:py|cpp|hpp)\b" % FOLDERS)


def text_files():
    for root in ROOTS:
        start = REPO / root
        for path in [start] if start.is_file() else sorted(start.rglob("*")):
            if path.is_file() and path.suffix in TEXT and not SKIP & set(path.relative_to(REPO).parts):
                yield path


def test_every_test_path_named_in_the_text_exists():
    missing = []
    for path in text_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for m in PATH.finditer(text):
            if not (REPO / m.group(0)).is_file():
                line = text.count("\n", 0, m.start()) + 1
                missing.append(f"{path.relative_to(REPO)}:{line}: {m.group(0)}")
    assert not missing, "test sources named but not there:\n" + "\n".join(missing)


def test_the_scan_sees_the_pointers_it_guards():
    """The scan reads the docs that point at tests: a pattern that matched nothing would pass vacuously."""
    named = {m.group(0) for path in text_files() if path.suffix == ".md" for m in PATH.finditer(path.read_text())}
    assert "tests/architecture/test_layering.py" in named, sorted(named)[:20]
