"""What publishing an adapter relies on (issue 28, section 4): the SDK ABI that
docs/writing-an-adapter.md shows and that registry/index's example entries
carry is the current one (an old one would be listed as incompatible), and
the install RPATH of a published adapter has $ORIGIN-relative entries only.
Static: reads the sources."""
from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_writing_an_adapter_shows_the_current_sdk_abi():
    import re
    abi = re.search(r"#define LLM2HEF_ADAPTER_ABI_VERSION (\d+)u",
                    (REPO / "sdk" / "include" / "llm2hef" / "sdk" / "abi.hpp").read_text()).group(1)
    doc = (REPO / "docs" / "writing-an-adapter.md").read_text()
    shown = re.findall(r'"sdk_abi": (\d+)', doc)
    assert shown and all(v == abi for v in shown), (shown, abi)


def test_the_example_index_entries_are_for_the_current_sdk_abi():
    """registry/index is the worked example of publishing (docs/writing-an-adapter.md): an entry left at an old ABI
    would be listed as incompatible by `registry search` on the llm2hef it documents."""
    import re
    abi = int(re.search(r"#define LLM2HEF_ADAPTER_ABI_VERSION (\d+)u",
                        (REPO / "sdk" / "include" / "llm2hef" / "sdk" / "abi.hpp").read_text()).group(1))
    entries = sorted((REPO / "registry" / "index").rglob("*.json"))
    assert entries
    stale = {str(e.relative_to(REPO)): json.loads(e.read_text())["sdk_abi"] for e in entries}
    assert all(v == abi for v in stale.values()), (stale, abi)


def test_published_adapters_get_an_origin_only_rpath():
    cmake = (REPO / "cmake" / "Llm2hefAdapter.cmake").read_text()
    # The install RPATH list: only $ORIGIN-relative entries are appended.
    appended = [line.strip() for line in cmake.splitlines() if line.strip().startswith("list(APPEND rpath")]
    assert appended and all('"$ORIGIN/' in line for line in appended), appended
