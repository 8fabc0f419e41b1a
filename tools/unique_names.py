#!/usr/bin/env python3
"""One name, one home (issue 38, section 3): fails when two production
sources share a name in a way that leaves a reader guessing which is meant.

Production sources are the C++ and Python files (and their .in templates)
under core/, sdk/, plugins/, registry/ and adapters/. Two rules:

- no file name twice, wherever the two are (two runtime_contract.hpp);
- a name's stem (hailo_config in hailo_config.cpp, .hpp, .cpp.in) lives in
  one home: a header in <room>/include/llm2hef/<room>/<folder>/ and its
  source in <room>/src/<folder>/ share a home, so foo.hpp and foo.cpp pair
  up, but a families.cpp.in in core/ beside a families.hpp in adapters/
  reads as its implementation and is refused.

tests/architecture/test_layering.py checks folder names inside core's layers.

    tools/unique_names.py [ROOT]

Exit status: 0 when every name is unique, 1 otherwise (each clash listed).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

ROOMS = ("core", "sdk", "plugins", "registry", "adapters")
SUFFIXES = (".cpp", ".hpp", ".h", ".py", ".cpp.in", ".hpp.in", ".py.in")


def production_sources(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for room in ROOMS for p in (root / room).rglob("*")
                  if p.is_file() and p.name.endswith(SUFFIXES))


def home(path: Path) -> str:
    """The folder a file belongs to, with include/llm2hef/<room>/ and src/
    dropped: core/include/llm2hef/core/io/x.hpp and core/src/io/x.cpp are
    both at home in core/io."""
    parts = list(path.parts[:-1])
    if "include" in parts:
        i = parts.index("include")
        del parts[i:i + 3]  # include/llm2hef/<room>
    if "src" in parts:
        parts.remove("src")
    return "/".join(parts)


def clashes(root: Path) -> list[str]:
    by_name: dict[str, list[Path]] = defaultdict(list)
    by_stem: dict[str, list[Path]] = defaultdict(list)
    for p in production_sources(root):
        by_name[p.name].append(p)
        by_stem[p.name.split(".")[0]].append(p)
    out = [f"{name} twice: {', '.join(map(str, paths))}" for name, paths in sorted(by_name.items())
           if len(paths) > 1]
    for stem, paths in sorted(by_stem.items()):
        homes = sorted({home(p) for p in paths})
        if len(homes) > 1:
            out.append(f"'{stem}' at home in {', '.join(homes)}: {', '.join(map(str, paths))}")
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    found = clashes(root)
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} name clash(es): give each file a name of its own", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
