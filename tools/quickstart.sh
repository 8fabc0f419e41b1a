#!/usr/bin/env bash
# One command from a fresh Debian 12 machine to a DFC-ready export:
# installs the build dependencies (Debian packages only: no Python, no npm),
# builds llm2hef without its test suite, lists the adapters and exports the
# bundled tiny GPT-2 checkpoint to out/gpt2-tiny. tools/test.sh adds the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLLM2HEF_BUILD_TESTS=OFF >/dev/null
cmake --build build
./build/llm2hef adapters
rm -rf out/gpt2-tiny
mkdir -p out
./build/llm2hef export tests/fixtures/gpt2-tiny -o out/gpt2-tiny --cache 64 --prefill 16 --gelu tanh
./build/llm2hef inputs out/gpt2-tiny --tokens 17,42,7 -o out/gpt2-tiny-inputs.npz --force
echo "done: out/gpt2-tiny (model.onnx, resources/, optimize.alls, compile.alls, calibrate.py, compile.py, validate_on_device.py, manifest.json)"
# The path goes on with calibrate (the precision plan, OUT/quantization.json)
# before compile.py, which applies that plan by itself (README, "The whole path").
echo "next: ./build/llm2hef calibrate out/gpt2-tiny --calib-text FILE (or --calib-chat FILE), then python out/gpt2-tiny/compile.py --calib-text FILE on the machine with Hailo's DFC"
