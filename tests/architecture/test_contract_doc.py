"""Every section of hailo-contract.md that the code and the docs cite exists.

Findings of lint, har and hef check, comments and docs cite the shipped
docs/hailo-contract.md by section ("hailo-contract.md §2", "hailo-contract.md
section 9", "hailo-contract.md sections 3, 8-9"); the rule tables of lint and
hef check give the section as a bare number next to the rule. A citation of a section that is
not a heading of the document is a dead end for the user who follows it.
Static: reads the sources, needs no binary.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "docs" / "hailo-contract.md"
CITING_DIRS = ("core", "sdk", "registry", "plugins", "adapters", "docs")  # and README.md
CITING_SUFFIXES = {".cpp", ".hpp", ".h", ".c", ".md", ".py", ".json", ".txt", ".cmake"}

# A list of section numbers: "2", "2-3", "3, 8-9", "2 and 9", "4, 5, 7, 8".
NUMBERS = r"\d+(?:\s*(?:,|and|or|-|–)\s*\d+)*"
# What may sit between the file name and "section" when a citation wraps:
# closing quotes/brackets, whitespace, and comment or string continuations.
GLUE = r"""(?:[`)\]'"\s]|//|#|\*)*"""
CITATION = re.compile(
    r"hailo-contract(?:\.md)?" + GLUE + r"(?:§\s?|sections?\s+)(" + NUMBERS + r")")
# The rule tables of lint and hef check: {"rule-name", "8, 9", Severity::...}
RULE_ROW = re.compile(r'\{"[a-z0-9-]+",\s*"(' + NUMBERS + r')",\s*Severity::')
# Inside the contract itself: "§5", "§5 item 4".
SELF_REFERENCE = re.compile(r"§\s?(\d+)")
HEADING = re.compile(r"^## (\d+)\. \S", re.MULTILINE)
# A citation that also names the part of the section: §2 "Op patterns",
# section 9, "Mask rows". The part is a bold lead-in inside that section.
NAMED_PART = re.compile(r"(?:§\s?|section\s+)(\d+),?\s+\"([^\"\n]{2,40})\"")


def section_numbers(text: str) -> set[int]:
    """The sections a list such as "3, 8-9" or "2 and 9" names."""
    out: set[int] = set()
    for part in re.split(r"\s*(?:,|and|or)\s*", text.strip()):
        bounds = [int(n) for n in re.split(r"\s*[-–]\s*", part) if n]
        if len(bounds) == 2:
            out.update(range(bounds[0], bounds[1] + 1))
        else:
            out.update(bounds)
    return out


def headings() -> list[int]:
    return [int(n) for n in HEADING.findall(CONTRACT.read_text(encoding="utf-8"))]


def citing_files():
    yield REPO / "README.md"
    for top in CITING_DIRS:
        for path in sorted((REPO / top).rglob("*")):
            if path.is_file() and path.suffix in CITING_SUFFIXES and path != CONTRACT:
                yield path


def citations() -> list[tuple[str, int]]:
    """(where, section) for every citation in production code and docs."""
    found = []
    for path in citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(REPO)
        for pattern in (CITATION, RULE_ROW) if path.suffix in {".cpp", ".hpp"} else (CITATION,):
            for m in pattern.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                for n in section_numbers(m.group(1)):
                    found.append((f"{rel}:{line}: {m.group(0)!r}", n))
    return found


def test_the_parser_reads_every_citation_form():
    def cited(text):
        return {n for m in CITATION.finditer(text) for n in section_numbers(m.group(1))}
    assert cited("see hailo-contract.md §2") == {2}
    assert cited("(hailo-contract.md section 10)") == {10}
    assert cited("hailo-contract.md sections 3, 8-9") == {3, 8, 9}
    assert cited("`hailo-contract.md` sections 2-3: the walls") == {2, 3}
    assert cited("hailo-contract.md sections 2 and 9") == {2, 9}
    assert cited("[hailo-contract.md](hailo-contract.md) section 4") == {4}
    assert cited("(hailo-contract.md\n    // section 7)") == {7}
    assert cited("hailo-contract.md is silent") == set()
    assert {n for m in RULE_ROW.finditer('{"network-groups", "8, 9", Severity::error, f},')
            for n in section_numbers(m.group(1))} == {8, 9}


def test_sections_are_numbered_one_to_twelve_in_order():
    # The numbers are what every citation points at: none may move or vanish.
    assert headings() == list(range(1, 13))


def test_every_cited_section_is_a_heading():
    found = citations()
    # The code and docs cite the contract in dozens of places (lint's rules,
    # hef check's tables, docs/*.md); finding few means the pattern broke.
    assert len(found) > 60, f"only {len(found)} citations found: the pattern no longer matches"
    assert len({where.split(":")[0] for where, _ in found}) > 10
    existing = set(headings())
    dead = [f"{where} -> section {n}" for where, n in found if n not in existing]
    assert not dead, "citations of sections hailo-contract.md does not have:\n" + "\n".join(dead)


def test_the_contract_refers_only_to_its_own_sections():
    existing = set(headings())
    text = CONTRACT.read_text(encoding="utf-8")
    dead = sorted({int(n) for n in SELF_REFERENCE.findall(text)} - existing)
    assert not dead, f"hailo-contract.md refers to sections it does not have: {dead}"


def test_no_doc_sends_the_reader_outside_the_repository_for_the_contract():
    # The contract used to live beside the repository (../shared/docs/); the
    # shipped and installed copy is docs/hailo-contract.md.
    stale = [str(p.relative_to(REPO)) for p in [*(REPO / "docs").glob("*.md"), REPO / "README.md"]
             if "../shared/docs" in p.read_text(encoding="utf-8")]
    assert not stale, f"docs pointing at ../shared/docs: {stale}"


def section_text(number: int) -> str:
    text = CONTRACT.read_text(encoding="utf-8")
    m = re.search(rf"^## {number}\. .*?(?=^## \d+\. |\Z)", text, re.MULTILINE | re.DOTALL)
    return m.group(0) if m else ""


def test_every_named_part_of_a_section_is_in_that_section():
    named = []
    for path in citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in NAMED_PART.finditer(text):
            named.append((f"{path.relative_to(REPO)}: {m.group(0)!r}", int(m.group(1)), m.group(2)))
    assert len(named) >= 5, f"only {len(named)} named citations found: the pattern no longer matches"
    missing = [where for where, n, part in named if f"**{part}**" not in section_text(n)]
    assert not missing, "named parts hailo-contract.md does not have there:\n" + "\n".join(missing)
