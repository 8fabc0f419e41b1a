"""tests/cli keeps the layout CONTRIBUTING.md describes ("Where a test goes").

Test files live in a folder per command or shared concern, never loose in
tests/cli, and their names are unique across the folders (pytest imports
each by its name, so two of one name cannot both run). A module of one
folder is imported only from that folder: pytest puts a folder on sys.path
only once it has collected a test there, so an import across folders works
in the whole suite and fails when the importing file runs alone. Helpers
several folders use live in tests/cli itself. Static: parses the sources.
"""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "tests" / "cli"


def folder_modules() -> dict[str, Path]:
    """Each module of a command folder by name -> its folder."""
    return {p.stem: p.parent for p in CLI.glob("*/*.py")}


def imported_names(tree: ast.AST):
    """Every module name an import names, at any depth (imports inside tests too), with its line."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0], node.lineno


def test_no_test_file_is_loose_in_tests_cli():
    loose = sorted(p.name for p in CLI.glob("test_*.py"))
    assert not loose, f"move these into the folder of the command they test (CONTRIBUTING.md): {loose}"


def test_test_file_names_are_unique_across_folders():
    names = Counter(p.name for p in CLI.glob("*/test_*.py"))
    assert not [n for n, k in names.items() if k > 1], sorted(n for n, k in names.items() if k > 1)


def test_a_folders_modules_are_imported_from_that_folder_only():
    modules = folder_modules()
    crossing = []
    for path in sorted(CLI.glob("*/*.py")):
        for name, line in imported_names(ast.parse(path.read_text())):
            home = modules.get(name)
            if home is not None and home != path.parent:
                crossing.append(f"{path.relative_to(REPO)}:{line} imports {name} from {home.relative_to(REPO)}")
    assert not crossing, "\n".join(crossing)


def test_the_shared_helpers_are_not_in_a_command_folder():
    """What conftest.py puts on sys.path for every folder is found there, not in one folder by chance."""
    shared = {p.stem for p in CLI.glob("*.py")} - {"conftest"}
    assert "llm2hef_cli" in shared
    assert not shared & set(folder_modules()), shared & set(folder_modules())
