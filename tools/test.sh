#!/usr/bin/env bash
# The test command: builds (if needed) and runs every test — GoogleTest units,
# the broken-plugin suite, CLI tests on the real binary and the numerics
# against Hugging Face references (pytest + onnxruntime).
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
ctest --test-dir build --output-on-failure -j2
