#!/usr/bin/env bash
# Installs what llm2hef needs to build and test on Debian 12 (bookworm):
# C++ dependencies from Debian packages, Python test tools from PyPI.
# Run as root (or with sudo). Safe to run twice.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ make pkg-config \
  libboost-dev libonnx-dev libprotobuf-dev protobuf-compiler \
  nlohmann-json3-dev libspdlog-dev libeigen3-dev libgtest-dev googletest \
  libarchive-dev libxxhash-dev \
  clang libclang-rt-14-dev time >/dev/null

# Tests and tools only (the product is C++): pinned for reproducible numerics.
python3 -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../tests/requirements.txt"
