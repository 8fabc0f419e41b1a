#!/usr/bin/env bash
# The test command: installs the test stack (tools/install-deps.sh, then
# tools/install-test-deps.sh: GoogleTest, a Python venv in build/venv, the real
# tokenizers and model), lints the Python (ruff), builds with the tests and
# runs every test: GoogleTest units, the broken-plugin suite, CLI tests on the
# real binary and the numerics against Hugging Face references (pytest +
# onnxruntime), all Python in the venv. Extra arguments go to ctest (e.g.
# -R install).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${LLM2HEF_VENV:-$PWD/build/venv}

bash tools/install-deps.sh
LLM2HEF_VENV=$VENV bash tools/install-test-deps.sh
# The Python lint (ruff.toml) first: well under a second, and it names the
# file and line. No cache: nothing is left in the tree.
"$VENV/bin/ruff" check --quiet --no-cache
# LLM2HEF_WERROR=ON (set by .ci/run): a warning fails the build.
# LLM2HEF_DEBUG_INFO: the -g level (default -g; .ci/run sets -g1, line tables
# only, which compiles about a quarter faster and still names file and line
# in a backtrace).
debug_info=${LLM2HEF_DEBUG_INFO:--g}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLM2HEF_BUILD_TESTS=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 $debug_info -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 $debug_info -DNDEBUG" \
  "-DLLM2HEF_WERROR=${LLM2HEF_WERROR:-OFF}" "-DPython3_EXECUTABLE=$VENV/bin/python" >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2 "$@"
