"""The fixture generator's recipe table agrees with the committed fixtures and
with tests/family_table.py, and every generator path the sources name exists.

tools/fixtures/make_fixtures.py builds each Hugging Face fixture from a recipe
in tools/fixtures/recipes/<group>.py. Read statically (ast: the recipes import
torch, the tests must not): every fixture of the family table has exactly one
recipe, each recipe module is one make_fixtures.py builds, and each recipe's
pinned transformers version, recorded script and HF class are what the
committed fixture.json and config.json say. Renaming or removing a generator
without updating the docs and tests that name it fails the last test."""
from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE_TOOLS = REPO / "tools" / "fixtures"
sys.path.insert(0, str(REPO / "tests"))
from family_table import FAMILIES  # noqa: E402


def module_constants(path: Path) -> dict:
    """The module-level NAME = literal assignments of a Python file, and for
    FIXTURES (a list of dict(...) calls) the literal keywords of each call."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if name == "FIXTURES":
            found[name] = [{kw.arg: ast.literal_eval(kw.value) for kw in call.keywords
                            if isinstance(kw.value, ast.Constant)} for call in node.value.elts]
        else:
            try:
                found[name] = ast.literal_eval(node.value)
            except ValueError:
                pass
    return found


def recipe_modules() -> dict[str, dict]:
    return {p.stem: module_constants(p) for p in sorted((FIXTURE_TOOLS / "recipes").glob("*.py"))
            if p.name != "__init__.py"}


def test_every_recipe_module_is_built():
    listed = module_constants(FIXTURE_TOOLS / "make_fixtures.py")["RECIPE_MODULES"]
    assert sorted(listed) == sorted(recipe_modules()), "make_fixtures.py's RECIPE_MODULES and recipes/*.py differ"


def test_every_family_fixture_has_one_recipe():
    names = [fx["name"] for m in recipe_modules().values() for fx in m["FIXTURES"]]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    missing = [x for f in FAMILIES for x in f.fixtures if x not in names]
    assert not missing, f"fixtures of tests/family_table.py without a recipe: {missing}"
    assert all((REPO / "tests" / "fixtures" / n).is_dir() for n in names), "a recipe without a committed fixture"


def test_recipes_match_the_committed_fixtures():
    bad = []
    for module, consts in recipe_modules().items():
        for fx in consts["FIXTURES"]:
            folder = REPO / "tests" / "fixtures" / fx["name"]
            gen = json.loads((folder / "fixture.json").read_text())["generator"]
            arch = json.loads((folder / "config.json").read_text())["architectures"][0]
            got = (gen["script"], gen["transformers"], arch)
            want = (consts["SCRIPT"], consts["TRANSFORMERS"], fx["arch"])
            if got != want:
                bad.append(f"{fx['name']}: fixture says {got}, recipes/{module}.py says {want}")
    assert not bad, "\n".join(bad)


def test_named_generator_paths_exist():
    sources = [REPO / "README.md", *(REPO / "docs").glob("*.md"), *FIXTURE_TOOLS.rglob("*.md"),
               *FIXTURE_TOOLS.rglob("*.txt"), *(REPO / "tests").rglob("*.py"),
               *(REPO / "tests").rglob("CMakeLists.txt")]
    dead = []
    for src in sources:  # not fixture.json: a committed fixture records the script that wrote it
        for path in sorted(set(re.findall(r"tools/fixtures/[\w/]+\.py", src.read_text(encoding="utf-8")))):
            if not (REPO / path).is_file():
                dead.append(f"{src.relative_to(REPO)}: {path}")
    assert not dead, "\n".join(dead)
