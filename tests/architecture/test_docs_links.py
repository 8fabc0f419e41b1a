"""Links and citations between the docs resolve. Every relative Markdown link
in README.md and docs/*.md names a file of the repository, and every citation
of docs/architectures.md by section ("architectures.md 7.5", "architectures.md
section 8.2", "1.3-1.4", "1.7, 1.8") names a heading it has. Renaming or
splitting a doc without updating its readers fails here. Static: reads the
sources, needs no binary."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURES = REPO / "docs" / "architectures.md"
CITING_DIRS = ("adapters", "core", "sdk", "registry", "plugins", "docs", "tests", "tools")
CITING_SUFFIXES = {".cpp", ".hpp", ".h", ".md", ".py", ".txt", ".cmake", ".sh"}

LINK = re.compile(r"\]\(([^)\s]+)\)")
# "architectures.md section 8.2", "architectures.md 7.1-7.2", "architectures.md 1.7, 1.8",
# also as a Markdown link: "[architectures.md](architectures.md) 7.5".
SECTION = r"\d+(?:\.\d+)?"
CITATION = re.compile(r"architectures\.md(?:\]\([^)]*\))?`?\s+(?:sections?\s+)?(" + SECTION +
                      r"(?:\s*(?:,|-|–|and)\s*" + SECTION + r")*)")
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)[.\s]", re.MULTILINE)


def markdown_files():
    yield REPO / "README.md"
    yield from sorted((REPO / "docs").glob("*.md"))


def test_every_relative_link_resolves():
    dead = []
    for md in markdown_files():
        prose = re.sub(r"`[^`\n]*`", "", md.read_text(encoding="utf-8"))  # code spans hold no links
        for target in LINK.findall(prose):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = target.split("#", 1)[0]
            if path and not (md.parent / path).exists():
                dead.append(f"{md.relative_to(REPO)} -> {target}")
    assert not dead, "relative links to files that do not exist:\n" + "\n".join(dead)


def headings() -> set[str]:
    return set(HEADING.findall(ARCHITECTURES.read_text(encoding="utf-8")))


def citations() -> list[tuple[str, str]]:
    found = []
    files = [REPO / "README.md"] + [p for top in CITING_DIRS for p in sorted((REPO / top).rglob("*"))
                                    if p.is_file() and p.suffix in CITING_SUFFIXES and p != ARCHITECTURES]
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITATION.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            for number in re.findall(SECTION, m.group(1)):
                found.append((f"{path.relative_to(REPO)}:{line}: {m.group(0)!r}", number))
    return found


def test_the_citation_reader_finds_the_citations():
    numbers = {n for _, n in citations()}
    assert len(citations()) >= 20 and {"1.4", "7.5", "8.2"} <= numbers, sorted(numbers)


def test_every_cited_section_of_architectures_is_a_heading():
    existing = headings()
    assert {"1", "1.4", "7", "7.5", "8", "12"} <= existing, sorted(existing)
    dead = [f"{where} -> {n}" for where, n in citations() if n not in existing]
    assert not dead, "citations of sections docs/architectures.md does not have:\n" + "\n".join(dead)


def test_nothing_points_outside_the_repository_for_architectures():
    # The reference used to live beside the repository (../shared/docs/).
    stale = [str(p.relative_to(REPO)) for p in markdown_files() if "shared/docs" in p.read_text(encoding="utf-8")]
    assert not stale, f"docs pointing at shared/docs: {stale}"
