"""The committed docs/*.svg are what their docs/*.dot source draws: every
line of every label in the source is a text of the SVG (Graphviz versions lay
out differently, so the bytes are not compared; the words are). And the
getting-started page and its picture are linked from the README's first
screen. Static: needs no binary and no Graphviz."""
from __future__ import annotations

import html
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def label_lines(dot_text: str) -> list[str]:
    lines = []
    for label in re.findall(r'label="((?:[^"\\]|\\.)*)"', dot_text):
        lines += [part.replace('\\"', '"') for part in label.split("\\n") if part.strip()]
    return lines


def svg_texts(svg_text: str) -> set[str]:
    return {html.unescape(t).strip() for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg_text)}


def test_every_dot_has_an_up_to_date_svg():
    sources = sorted(DOCS.glob("*.dot"))
    assert sources, "no docs/*.dot"
    for dot in sources:
        svg = dot.with_suffix(".svg")
        assert svg.is_file(), f"{svg.relative_to(REPO)} is missing: run bash tools/docs/render-diagrams.sh"
        texts = svg_texts(svg.read_text(encoding="utf-8"))
        missing = [line for line in label_lines(dot.read_text(encoding="utf-8")) if line.strip() not in texts]
        assert not missing, (f"{svg.relative_to(REPO)} does not show {missing}: it is older than "
                             f"{dot.relative_to(REPO)}; run bash tools/docs/render-diagrams.sh")


def test_the_label_reader_sees_the_labels():
    lines = label_lines((DOCS / "getting-started.dot").read_text(encoding="utf-8"))
    assert "copy model.hef" in lines and "model.hef" in lines and len(lines) > 15


def test_the_readme_first_screen_links_getting_started():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_screen = readme[: readme.index("## The whole path")]
    assert "(docs/getting-started.md)" in first_screen
    assert "(docs/getting-started.svg)" in first_screen
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    assert "(getting-started.svg)" in page
