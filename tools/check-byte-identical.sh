#!/usr/bin/env bash
# Exports every checkpoint fixture (and the real SmolLM2 GGUF when it is
# installed) with one llm2hef binary and records a SHA-256 of every file each
# export writes, plus the exit status and the error text of refused exports.
# Used to prove a refactoring changes no byte of any export (issue 29):
#
#   tools/check-byte-identical.sh record  BASELINE.txt [BUILD_DIR]   # before
#   tools/check-byte-identical.sh compare BASELINE.txt [BUILD_DIR]   # after
#
# `compare` records again and diffs against BASELINE.txt; it exits 1 on any
# difference. BUILD_DIR defaults to ./build. The two runs may use different
# checkouts and build folders (manifest.json's adapter path is hashed with its
# build folder written BUILD). manifest.json records the checkpoint's absolute path, so the fixtures are
# reached through one fixed link (SCRATCH, default /tmp/llm2hef-byte-identical)
# and the exports land there too, whatever the checkout.
set -euo pipefail

usage() { echo "usage: $0 record|compare FILE [BUILD_DIR]" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
mode=$1 file=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${3:-$repo/build}" && pwd)
bin=$build/llm2hef
[[ -x $bin ]] || bin=$(find "$build" -maxdepth 3 -type f -name llm2hef -perm -u+x | head -1)
[[ -x $bin ]] || { echo "no llm2hef binary under $build" >&2; exit 2; }
scratch=${SCRATCH:-/tmp/llm2hef-byte-identical}
rm -rf "$scratch" && mkdir -p "$scratch/out"
ln -s "$repo/tests/fixtures" "$scratch/fixtures"
ln -s "$repo/tests/.real-models" "$scratch/real-models"

# One export: LABEL MODEL ARGS... -> lines "LABEL rc N", "LABEL stderr SHA"
# (refusals only: a successful export's log carries timings), and
# "LABEL FILE SHA" for every file written.
run_case() {
  local label=$1 model=$2; shift 2
  local out=$scratch/out/$label rc=0
  "$bin" export "$model" -o "$out" --no-progress "$@" >"$scratch/stdout" 2>"$scratch/stderr" || rc=$?
  echo "$label rc $rc"
  if [[ $rc -ne 0 ]]; then
    echo "$label stderr $(sha256sum <"$scratch/stderr" | cut -d' ' -f1) $(head -c 300 "$scratch/stderr" | tr '\n' ' ')"
    return
  fi
  (cd "$out" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | while read -r sha name; do
    # manifest.json names the adapter's file, which lies under the build
    # folder: hashed with that folder written BUILD, so that two checkouts
    # (a git worktree against main) compare.
    [[ $name == ./manifest.json ]] && sha=$(sed "s#$build/#BUILD/#g" "$out/manifest.json" | sha256sum | cut -d' ' -f1)
    echo "$label ${name#./} $sha"
  done
  rm -rf "$out"
}

# The fixtures (tests/family_table.py) of every family whose adapter declares
# option $1 (`llm2hef adapters --json`): no list of families to keep here.
fixtures_taking() {
  "$bin" adapters --json | python3 -c '
import json, sys
sys.path.insert(0, sys.argv[1])
from family_table import BY_ADAPTER
for a in json.load(sys.stdin)["adapters"]:
    if a["name"] in BY_ADAPTER and any(o["name"] == sys.argv[2] for o in a["options"]):
        print(" ".join(BY_ADAPTER[a["name"]].fixtures))
' "$repo/tests" "$1"
}

record() {
  local dir name
  for dir in "$scratch"/fixtures/*/; do
    name=$(basename "$dir")
    [[ -f $dir/config.json ]] || continue
    run_case "$name.cache32" "$scratch/fixtures/$name" --cache 32 --prefill 8
    run_case "$name.cache64" "$scratch/fixtures/$name" --cache 64 --prefill 16
    run_case "$name.default" "$scratch/fixtures/$name"
  done
  # The adapter options, each on the fixtures of every family whose adapter takes it.
  local f
  for f in $(fixtures_taking gelu); do
    run_case "$f.gelu-tanh" "$scratch/fixtures/$f" --cache 32 --prefill 8 --gelu tanh
  done
  for f in $(fixtures_taking sliding-window); do
    run_case "$f.band64" "$scratch/fixtures/$f" --cache 64 --prefill 16 --sliding-window band
  done
  # Refusals: a checkpoint forced onto another adapter, a cache beyond what is exact.
  local pair
  for pair in qwen2-tiny:llama qwen3-tiny:llama gemma2-tiny:llama granite-tiny:llama smollm3-tiny:llama \
              llama3-tiny:qwen3 olmo2-tiny:llama stablelm-tiny:llama phi3-longrope:llama neox-parallel:gpt2; do
    run_case "${pair%%:*}.as-${pair##*:}" "$scratch/fixtures/${pair%%:*}" --cache 32 --prefill 8 --adapter "${pair##*:}"
  done
  for f in mistral-window phi3-longrope gpt2-tiny; do
    run_case "$f.cache4096" "$scratch/fixtures/$f" --cache 4096 --prefill 64
  done
  run_case "lfm2-tiny.shards2" "$scratch/fixtures/lfm2-tiny" --cache 32 --prefill 8 --lm-head-shards 2
  local gguf=$scratch/real-models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
  if [[ -f $gguf ]]; then run_case smollm2-real.cache256 "$gguf" --cache 256 --prefill 64; fi
}

case $mode in
  record) record >"$file"; echo "recorded $(grep -c ' rc ' "$file") exports in $file" ;;
  compare)
    record >"$scratch/now.txt"
    if diff -u "$file" "$scratch/now.txt" >"$scratch/diff.txt"; then
      echo "byte-identical: $(grep -c ' rc ' "$file") exports, $(grep -vc ' rc \| stderr ' "$file") files"
    else
      cat "$scratch/diff.txt"; echo "DIFFERENT (see above)"; exit 1
    fi ;;
  *) usage ;;
esac
