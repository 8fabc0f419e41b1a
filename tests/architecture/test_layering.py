"""The tree's rooms include each other in one direction only.

Top level: sdk (what adapters compile against) <- plugins <- registry <- core,
and adapters on the SDK and the families library beside them
(adapters/families: llm2hef/families/, which nothing outside adapters/ may
include). Inside core, each folder (a stage of the
pipeline or something several stages read) includes only folders listed
before it in CORE_LAYERS. An include that goes the other way is a cycle in
the making: the file and the include are named. Static: reads the sources,
needs no binary.
"""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"llm2hef/([a-z_]+)/(?:([a-z_]+)/)?', re.MULTILINE)
SUFFIXES = {".cpp", ".hpp", ".h", ".in"}

# Who may include whom at the top level.
TOP_ALLOWED = {
    "sdk": set(),
    "plugins": {"sdk"},
    "registry": {"sdk", "plugins"},
    "core": {"sdk", "plugins", "registry"},
    "adapters": {"sdk", "families"},
}

# core's folders, each allowed to include only those before it:
# - io, rules, chat: shared helpers with no stage behind them; hub: fetching a
#   model from the Hugging Face Hub into its cache (io only);
# - manifest: manifest.json as one type; runtime: the inputs the genai
#   runtime feeds, computed from an export (reads the manifest);
# - checkpoint: reading the model; lint, hef, har: checkers and fixers of
#   what the DFC takes and gives back;
# - dfc: the kit export writes (model scripts, compile.py);
# - export: the pipeline that writes all of it (runs the hailo-config rules
#   and lint on what it writes);
# - package and inspect: read an export or dry-run one.
CORE_LAYERS = ["io", "hub", "rules", "chat", "manifest", "runtime", "checkpoint", "lint", "hef", "har", "dfc",
               "export", "package", "inspect"]


def sources(folder):
    return sorted(p for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in SUFFIXES)


def core_folder(path):
    """The folder of core a file belongs to (src/<x>/... or include/llm2hef/core/<x>/...), or None."""
    rel = path.relative_to(REPO / "core").parts
    if rel[0] == "src" and len(rel) > 2:
        return rel[1]
    if rel[:3] == ("include", "llm2hef", "core") and len(rel) > 4:
        return rel[3]
    return None


def test_top_level_rooms_include_downward_only():
    wrong = []
    for top, allowed in TOP_ALLOWED.items():
        for path in sources(top):
            for m in INCLUDE.finditer(path.read_text(errors="replace")):
                target = m.group(1)
                if target != top and target not in allowed:
                    wrong.append(f"{path.relative_to(REPO)}: includes llm2hef/{target}/ ({top} may include "
                                 f"{', '.join(sorted(allowed)) or 'nothing else'})")
    assert not wrong, "\n".join(wrong)


def test_core_folders_include_earlier_layers_only():
    rank = {name: i for i, name in enumerate(CORE_LAYERS)}
    found = set()
    wrong = []
    for path in sources("core"):
        folder = core_folder(path)
        if folder is None or folder not in rank:
            continue
        found.add(folder)
        for m in INCLUDE.finditer(path.read_text(errors="replace")):
            if m.group(1) != "core" or not m.group(2) or m.group(2) == folder:
                continue
            target = m.group(2)
            if target not in rank:
                wrong.append(f"{path.relative_to(REPO)}: includes core/{target}/, a folder CORE_LAYERS does not place")
            elif rank[target] > rank[folder]:
                wrong.append(f"{path.relative_to(REPO)}: includes core/{target}/, which comes after {folder}/ "
                             f"({' < '.join(CORE_LAYERS)})")
    assert not wrong, "\n".join(wrong)
    assert found == set(CORE_LAYERS), f"folders in CORE_LAYERS without sources: {set(CORE_LAYERS) - found}"


def test_every_core_folder_is_placed():
    # A new folder under core/src must be given its place, or its includes go unchecked.
    folders = {p.name for p in (REPO / "core" / "src").iterdir() if p.is_dir()}
    assert folders <= set(CORE_LAYERS), f"core/src folders not in CORE_LAYERS: {sorted(folders - set(CORE_LAYERS))}"


def test_every_core_file_sits_in_a_placed_folder():
    # A header straight under include/llm2hef/core/ (or a source straight under
    # src/) belongs to no layer, so its includes and includers go unchecked.
    loose = [str(p.relative_to(REPO)) for p in sources("core")
             if p.relative_to(REPO / "core").parts[0] in ("src", "include") and core_folder(p) is None]
    assert not loose, f"core files outside a layer folder (give each its folder in CORE_LAYERS): {loose}"


def test_source_names_are_unique():
    # One name, one home: two files of one name (export/ and runtime/
    # hailo_config.hpp, plugins/ and core/io/ child_process.hpp) leave a
    # reader and a grep guessing which is meant. A .cpp and the header it
    # implements share a name, so names are compared per suffix. Folders
    # inside a layer must not reuse a layer's name either (lint/rules beside rules/).
    seen = {}
    for top in ("sdk", "plugins", "registry", "core", "adapters"):
        for path in sources(top):
            seen.setdefault((path.name, path.suffix), []).append(str(path.relative_to(REPO)))
    twice = {name: paths for (name, _), paths in seen.items() if len(paths) > 1}
    assert not twice, f"file names used twice: {twice}"
    reused = [str(p.relative_to(REPO)) for layer in CORE_LAYERS for p in (REPO / "core" / "src" / layer).rglob("*")
              if p.is_dir() and p.name in CORE_LAYERS]
    assert not reused, f"folders inside a layer named like a layer: {reused}"


def test_headers_are_one_piece():
    # A header whose #include lines go on after its first namespace is two
    # headers glued into one (calibrate_script.hpp carried calibrate's
    # argument checks): each part gets a header of its own, named for it.
    glued = []
    for top in ("sdk", "plugins", "registry", "core", "adapters"):
        for path in sources(top):
            if path.suffix not in (".hpp", ".h"):
                continue
            lines = path.read_text(errors="replace").splitlines()
            first = next((i for i, line in enumerate(lines) if line.startswith("namespace ")), len(lines))
            if any(line.lstrip().startswith("#include") for line in lines[first:]):
                glued.append(str(path.relative_to(REPO)))
    assert not glued, f"headers with includes after their first namespace (split them): {glued}"
