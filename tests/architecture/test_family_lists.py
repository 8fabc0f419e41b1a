"""The list of families is stated once, in tests/family_table.py, and every
other list is derived (issue 38, section 1): the build adds every folder of
adapters/ (adapters/CMakeLists.txt globs them), the tests read the table, and
`llm2hef adapters` says which adapters were found. These checks fail when one
of those drifts from the others: an adapter folder without a row, a row
without its folder, fixture or doc page, a folder the build did not turn into
an adapter."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from family_table import BY_ADAPTER, FAMILIES  # noqa: E402

ADAPTERS = REPO / "adapters"
LIBRARY = "families"  # adapters/families: the shared descriptions, not an adapter


def adapter_folders() -> set[str]:
    return {p.parent.name for p in ADAPTERS.glob("*/CMakeLists.txt")} - {LIBRARY}


def test_every_adapter_folder_has_a_family_row_and_every_row_a_folder():
    folders = adapter_folders()
    assert folders, f"no adapter folders under {ADAPTERS}"
    assert folders - set(BY_ADAPTER) == set(), "adapter folders without a row in tests/family_table.py"
    assert set(BY_ADAPTER) - folders == set(), "family_table rows without an adapters/<name>/ folder"
    assert len(BY_ADAPTER) == len(FAMILIES), "two family_table rows for one adapter"


def test_the_build_made_one_adapter_per_folder():
    # ctest passes the first-party targets the build recorded and the folder
    # it wrote them to; run by hand, the default build folder.
    targets = [t for t in os.environ.get("LLM2HEF_FIRST_PARTY_ADAPTERS", "").split(",") if t]
    if targets:
        assert {t.removeprefix("llm2hef_adapter_") for t in targets} == adapter_folders()
    built = Path(os.environ.get("LLM2HEF_BUILD_ADAPTER_DIR", REPO / "build" / "adapters"))
    libraries = {p.name.removeprefix("llm2hef_adapter_").removesuffix(".so")
                 for p in built.glob("llm2hef_adapter_*.so")}
    assert libraries == adapter_folders(), f"{built}: built {sorted(libraries)}"


def test_every_family_row_names_existing_fixtures_and_a_doc_page_that_names_the_adapter():
    for f in FAMILIES:
        for fixture in f.fixtures:
            assert (REPO / "tests" / "fixtures" / fixture / "config.json").is_file(), f"{f.adapter}: {fixture}"
        page = REPO / "docs" / f.doc
        assert page.is_file(), f"{f.adapter}: docs/{f.doc} does not exist"
        assert f.adapter in page.read_text(), f"docs/{f.doc} does not name the {f.adapter} adapter"


def test_status_names_every_family_page():
    # docs/status.md links each family's page for the reader: checked against the table, not kept by hand.
    status = (REPO / "docs" / "status.md").read_text()
    missing = sorted({f.doc for f in FAMILIES if f"docs/{f.doc}" not in status})
    assert not missing, f"docs/status.md does not name {missing}"
