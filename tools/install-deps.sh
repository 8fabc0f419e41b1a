#!/usr/bin/env bash
# Installs what building llm2hef and exporting a model need on Debian 12
# (bookworm) and Debian-12-based systems (Raspberry Pi OS): the C++ toolchain
# and the -dev packages of the libraries, all from Debian. Nothing else: the
# test stack (GoogleTest, a Python virtual environment, the real tokenizers
# and model) is tools/install-test-deps.sh's, run by tools/test.sh.
# Root or sudo on a first run; does nothing when all is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/apt-install.sh \
  cmake ninja-build g++ make pkg-config \
  libboost-dev libonnx-dev libprotobuf-dev protobuf-compiler \
  nlohmann-json3-dev libspdlog-dev libeigen3-dev \
  libarchive-dev libxxhash-dev zlib1g-dev libcli11-dev nettle-dev libcurl4-openssl-dev libsodium-dev
