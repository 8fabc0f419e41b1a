"""No graph-building call is one of several sibling arguments of another call.

C++ leaves the evaluation order of a call's arguments unspecified, and the
order of GraphBuilder calls is the order of nodes, initializers and
external-data bytes in model.onnx and model.onnx.data. So `g.add(part(a),
part(b))` or `g.mul(g.mul(x, y), g.weight(...))` would make an export depend
on the compiler (issue 13 item 5); each such call must be a statement of its
own. Nesting one builder call inside another (`g.transpose(g.reshape(...))`)
is fine: there the order is fixed.

This is a source scan of the first-party graph code (sdk/src, adapters/,
examples/), by a small argument splitter rather than a C++ parser: it knows
the builder by `g.<op>(`, by `(g,` (SDK blocks take the builder first) and by
the local helpers that wrap it.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted(
    [*REPO.glob("sdk/src/*.cpp"), *REPO.glob("adapters/*/*.cpp"), *REPO.glob("examples/*/*.cpp")])

# An argument that builds something: a builder method other than scope(), a
# function given the builder as first argument, or the adapters' local helpers.
BUILDS = re.compile(r"\bg\.(?!scope\b)[a-z_]+\(|\(g,|\b(?:part|tap|proj|positions)\(|_(?:mixer|ffn)\(")


def top_level_args(text: str, open_paren: int) -> list[str]:
    """The top-level arguments of the call whose '(' is at open_paren."""
    depth, start, args, i = 0, open_paren + 1, [], open_paren
    while i < len(text):
        c = text[i]
        if c == '"':
            i += 1
            while text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args


def sibling_builder_calls(source: str) -> list[str]:
    """'line: arg | arg' for every call with two or more building arguments."""
    text = re.sub(r"//[^\n]*", lambda m: " " * len(m.group()), source)
    found = []
    for m in re.finditer(r"\(", text):
        # A lambda body passed as an argument is not evaluated there.
        building = [a.strip() for a in top_level_args(text, m.start())
                    if BUILDS.search(a) and not a.strip().startswith("[")]
        if len(building) >= 2:
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{line}: " + " | ".join(a[:60] for a in building))
    return found


def test_the_scan_sees_the_graph_code():
    names = {p.name for p in SOURCES}
    assert {"blocks.cpp", "decoder.cpp", "gpt2_adapter.cpp", "lfm2_adapter.cpp"} <= names


def test_the_scan_flags_sibling_builder_calls():
    bad = """
    Value a = g.add(g.mul(head, g.scalar("scale", s), "m"), g.scalar("one", 1.0f), "a");
    return g.layer_normalization(x, g.weight("weight", ckpt, w), g.weight("bias", ckpt, b), eps);
    Value sum = g.add(part(pe.q_cos, 0, "q"), part(pe.k_cos, 1, "k"), "cos/Add");
    """
    assert len(sibling_builder_calls(bad)) == 3
    good = """
    Value qh = g.transpose(g.reshape(q, {1, s, h, d}, "q/Reshape"), {0, 2, 1, 3}, "q/Transpose");
    const Value one = g.scalar("one", 1.0f);
    return g.div(one, g.sqrt(x));
    """
    assert sibling_builder_calls(good) == []


def test_no_sibling_builder_calls_in_graph_code():
    offenders = {str(p.relative_to(REPO)): hits for p in SOURCES if (hits := sibling_builder_calls(p.read_text()))}
    assert offenders == {}, "builder calls as sibling arguments (give each its own statement): " + repr(offenders)
