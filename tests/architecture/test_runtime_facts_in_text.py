"""The runtime facts that prose repeats agree with their one home.

core/include/llm2hef/core/runtime/hef_names.hpp holds the names of the HEF
resources and the suffixes of the two network groups, and the SDK's
runtime_contract.hpp the genai runtime's defaults; the code reads them from
there. Messages and help text still spell
some of them out, for the reader's sake. These tests fail when such prose
and the table part ways: a `*.bin` resource or a `__group` suffix named in
core's sources that the table does not hold (the table was changed, the
prose was not), or help text quoting another default than the table's.
"""

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "core" / "include" / "llm2hef" / "core" / "runtime" / "hef_names.hpp"
# The runtime's defaults live beside the inputs, in the SDK's half of the table.
SDK_CONTRACT = REPO / "sdk" / "include" / "llm2hef" / "sdk" / "runtime_contract.hpp"
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))

# File names ending in .bin that are not HEF resources (checkpoint formats).
NOT_RESOURCES = {"pytorch_model.bin"}


def contract():
    text = CONTRACT.read_text()
    ints = {m.group(1): int(m.group(2))
            for m in re.finditer(r"constexpr int64_t (kRuntimeDefault\w+) = (\d+);", SDK_CONTRACT.read_text())}
    strings = {m.group(1): m.group(2) for m in re.finditer(r'constexpr char (k\w+)\[\] = "([^"]+)";', text)}
    return ints, strings


def core_sources():
    for folder in ("core/src", "core/cli", "core/include"):
        for p in sorted((REPO / folder).rglob("*")):
            if p.is_file() and p.suffix in {".cpp", ".hpp", ".in"}:
                yield p


def test_the_table_is_read():
    ints, strings = contract()
    assert set(ints) == {"kRuntimeDefaultCacheSize", "kRuntimeDefaultAttentionHeads", "kRuntimeDefaultKeyValueHeads",
                         "kRuntimeDefaultPrefillTokens"}, ints
    assert {"kResourceEmbeddings", "kResourceTheta", "kPrefillGroupSuffix", "kTbtGroupSuffix"} <= set(strings), strings


def test_every_bin_resource_and_group_suffix_named_in_core_is_the_tables():
    _, strings = contract()
    resources = {v for k, v in strings.items() if k.startswith("kResource")}
    suffixes = {strings["kPrefillGroupSuffix"], strings["kTbtGroupSuffix"]}
    wrong = []
    for path in core_sources():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name in re.findall(r"\b[a-z][a-z0-9_]*\.bin\b", line):
                if name not in resources and name not in NOT_RESOURCES:
                    wrong.append(f"{path.relative_to(REPO)}:{n}: '{name}' is no resource of hef_names.hpp")
            for suffix in re.findall(r"(?<![A-Za-z0-9])__(?:prefill|tbt|[a-z]+_group)\b", line):
                if suffix not in suffixes:
                    wrong.append(f"{path.relative_to(REPO)}:{n}: '{suffix}' is no group suffix of hef_names.hpp")
    assert not wrong, "\n".join(wrong)


def test_export_help_quotes_the_tables_defaults():
    ints, _ = contract()
    r = subprocess.run([str(BIN), "export", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    cap = re.search(r"capped at (\d+) as Hailo's own models", text)
    prefill = re.search(r"prefill_input_tokens_count \(<= N; default (\d+),", text)
    assert cap and prefill, text
    assert int(cap.group(1)) == ints["kRuntimeDefaultCacheSize"]
    assert int(prefill.group(1)) == ints["kRuntimeDefaultPrefillTokens"]
