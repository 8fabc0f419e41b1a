#!/usr/bin/env python3
"""Lists the production functions longer than a limit (100 lines by default),
C++ and Python, and fails when one is not on the allow-list (issue 38: a long
function is split into named steps, so each step can be read and tested).

C++ (core/, sdk/, adapters/, plugins/): comments, string and character
literals (raw strings too) and preprocessor lines are blanked out, then the
braces are matched. A brace at namespace or class scope whose header has a
parameter list opens a function; its length runs from the header's first line
to the closing brace. Lambdas and local classes count towards the function
that holds them. Python (core/src/dfc/*.py and the *.py.in templates of the
generated drivers): ast's line numbers of every def, nested ones included.

    tools/function_lengths.py [--limit N] [--allow FILE] [ROOT]

Exit status: 0 when every function over the limit is on the allow-list,
1 otherwise (each one listed as path:line: name (N lines)), 2 usage.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

CPP_FOLDERS = ("core", "sdk", "adapters", "plugins")
CPP_SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cpp.in", ".hpp.in"}
PYTHON_GLOBS = ("core/src/dfc/*.py", "core/src/dfc/*.py.in")
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return"}  # never a function header


def blank_cpp(text: str) -> str:
    """The text with comments, literals and preprocessor lines replaced by
    spaces; newlines are kept, so line numbers stay right."""
    out: list[str] = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        line_start = c == "\n"
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and text.startswith('"', i + 1) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
                                                            or text[i - 1] in "uU8L"):
            m = re.match(r'R"([^ ()\\\t\n]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            end = text.find(close, i + m.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum() \
                    and re.match(r"[0-9a-fA-FxXbB.']", text[i - 1]):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(header: str) -> str:
    """The name before the parameter list of a function header."""
    depth = 0
    for k, ch in enumerate(header):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            m = re.search(r"([\w:~]+(?:\s*operator\s*\S+)?)\s*$", header[:k])
            return m.group(1) if m else "?"
    return "?"


def classify(header: str) -> str:
    """What a brace at namespace or class scope opens: namespace, class,
    function or other (an initializer, an enum)."""
    h = re.sub(r"^(\s*(public|private|protected)\s*:)+", "", header).strip()
    h = re.sub(r"\[\[[^\]]*\]\]", " ", h).strip()
    if re.match(r"^(inline\s+)?namespace\b", h) or re.match(r'^extern\s*$', h) or h.startswith("extern "):
        return "namespace"
    if re.search(r"(^|[\s>])(class|struct|union)\s+[\w:]*\s*(final\s*)?(:[^()]*)?$", h) or \
            re.match(r"^(template\s*<.*>\s*)?(class|struct|union)\b[^(]*$", h):
        return "class"
    if re.search(r"\benum\b", h):
        return "other"
    # No parameter list, or an initializer (`x = {`, `T t{`): not a body.
    if "(" not in h or h.endswith("="):
        return "other"
    first = re.match(r"^\w+", h)
    return "other" if first and first.group(0) in CONTROL else "function"


def matching_brace(text: str, i: int) -> int:
    """The index just past the brace closing the one at i."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


def is_member_brace_init(header: str) -> bool:
    """`Foo::Foo(int x) : a_(x), b_` before a `{`: that brace initializes a
    member; the body comes later."""
    return bool(re.search(r"\)\s*(noexcept\s*)?:(?!:)", header)) and bool(re.search(r"[\w>]\s*$", header))


def cpp_functions(path: Path) -> list[tuple[str, int, int]]:
    """(name, first line, line count) of every function defined in path."""
    text = blank_cpp(path.read_text(encoding="utf-8", errors="replace"))
    found: list[tuple[str, int, int]] = []
    stack: list[str] = []  # the namespaces and classes the scan is in
    header_start, header_line = 0, None  # where the text before the next brace begins
    i, line = 0, 1
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
        elif c == "{":
            header = text[header_start:i]
            kind = classify(header)
            if kind == "function" and is_member_brace_init(header):
                end = matching_brace(text, i)
                line += text.count("\n", i, end)
                i = end
                continue
            if kind in ("namespace", "class"):
                stack.append(kind)
            else:  # a function body or an initializer: its braces are only counted
                end = matching_brace(text, i)
                last = line + text.count("\n", i, end)
                first = header_line if header_line is not None else line
                if kind == "function":
                    found.append((function_name(header), first, last - first + 1))
                line, i = last, end
                header_start, header_line = i, None
                continue
            header_start, header_line = i + 1, None
        elif c in ";}":
            if c == "}" and stack:
                stack.pop()
            header_start, header_line = i + 1, None
        elif header_line is None and not c.isspace():
            header_line = line
        i += 1
    return found


def python_functions(path: Path) -> list[tuple[str, int, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.name, first, node.end_lineno - first + 1))
    return out


def production_files(root: Path) -> list[Path]:
    files = []
    for folder in CPP_FOLDERS:
        for p in sorted((root / folder).rglob("*")):
            if p.is_file() and any(p.name.endswith(s) for s in CPP_SUFFIXES):
                files.append(p)
    for pattern in PYTHON_GLOBS:
        files.extend(sorted(root.glob(pattern)))
    return files


def long_functions(root: Path, limit: int) -> list[tuple[str, str, int, int]]:
    """(path relative to root, name, first line, lines) over the limit."""
    out = []
    for p in production_files(root):
        funcs = python_functions(p) if p.name.endswith((".py", ".py.in")) else cpp_functions(p)
        for name, first, count in funcs:
            if count > limit:
                out.append((p.relative_to(root).as_posix(), name, first, count))
    return out


def read_allow_list(path: Path | None) -> set[tuple[str, str]]:
    """`path name` pairs, one a line; # starts a comment."""
    if path is None or not path.exists():
        return set()
    allowed = set()
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            file, _, name = line.partition(" ")
            allowed.add((file, name.strip()))
    return allowed


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--allow", help="allow-list file: `path name` per line")
    args = ap.parse_args(argv)
    root = Path(args.root)
    allowed = read_allow_list(Path(args.allow) if args.allow else None)
    over = long_functions(root, args.limit)
    failing = [f for f in over if (f[0], f[1]) not in allowed]
    for file, name, first, count in over:
        tag = "allowed for now" if (file, name) in allowed else "over the limit"
        print(f"{file}:{first}: {name} ({count} lines, {tag})")
    stale = allowed - {(f[0], f[1]) for f in over}
    for file, name in sorted(stale):
        print(f"note: {file} {name} is on the allow-list but no longer over {args.limit} lines: remove it")
    if failing:
        print(f"{len(failing)} function(s) over {args.limit} lines: split them into named steps", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
