"""README's adapter example compiles against today's SDK.

The example is what a newcomer copies first, so it must not drift from the
SDK the way the old `sdk::Adapter` one did (its AdapterInfo, Plan and
Checkpoint named nothing in scope). Syntax-only compile of the ```cpp block
under "## Writing an adapter", with the include folders an adapter built in
this tree gets (the SDK's, the generated build_info.hpp's, the families').
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
GENERATED_SDK_INCLUDE = BIN.parent / "sdk" / "include"


def readme_adapter_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text.index("## Writing an adapter")
    start = text.index("```cpp\n", section) + len("```cpp\n")
    return text[start:text.index("```", start)]


def test_readme_adapter_example_compiles(tmp_path):
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        pytest.skip("no C++ compiler")
    if not (GENERATED_SDK_INCLUDE / "llm2hef" / "sdk" / "build_info.hpp").is_file():
        pytest.skip(f"no build tree beside {BIN} (build_info.hpp is generated)")
    source = tmp_path / "my_adapter.cpp"
    source.write_text(readme_adapter_example())
    result = subprocess.run(
        [compiler, "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
         f"-I{REPO / 'sdk' / 'include'}", f"-I{GENERATED_SDK_INCLUDE}",
         f"-I{REPO / 'adapters' / 'families' / 'include'}", str(source)],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
