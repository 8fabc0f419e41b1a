#!/usr/bin/env bash
# Wall time and peak resident memory of `llm2hef har fix` on synthetic
# multi-GB HARs (tools/bench/make_synthetic_har.py), next to a plain `cp` of
# the same file. The design target: peak RSS flat (independent of the HAR's
# size) and time close to the copy. Not run by CI.
#
# Usage: bench_har_fix.sh [--llm2hef PATH] [--scratch DIR] [--gb N] [--keep]
set -euo pipefail
cd "$(dirname "$0")/../.."

llm2hef=build/llm2hef
scratch=${LLM2HEF_BENCH_DIR:-/tmp/llm2hef-bench-har}
gb=3
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --llm2hef) llm2hef=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --gb) gb=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
llm2hef=$(realpath "$llm2hef")
mkdir -p "$scratch"
if [[ ! -f $scratch/parsed.har || ! -f $scratch/quantized.har ]]; then
  python3 tools/bench/make_synthetic_har.py "$scratch" --gb "$gb"
fi

bash tools/apt-install.sh time   # /usr/bin/time

measure() {  # label, command...
  local label=$1; shift
  local log; log=$(mktemp)
  /usr/bin/time -v "$@" >/dev/null 2>"$log"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2/1024}' "$log")
  printf '%-40s %12s %10s MB\n' "$label" "$wall" "$rss"
  rm -f "$log"
}

printf '%-40s %12s %13s\n' "step" "wall" "peak RSS"
for har in parsed quantized; do
  size=$(stat -c %s "$scratch/$har.har")
  echo "# $har.har: $size bytes"
  measure "cp $har.har" cp "$scratch/$har.har" "$scratch/copy.har"
  rm -f "$scratch/copy.har"
  measure "har fix $har.har" "$llm2hef" har fix "$scratch/$har.har" -o "$scratch/fixed.har" --force --no-progress
  measure "har fix (second run, no change)" "$llm2hef" har fix "$scratch/fixed.har" -o "$scratch/fixed2.har" --force --no-progress
  "$llm2hef" har fix "$scratch/fixed.har" --dry-run --json | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["changes"] == 0, r'
  rm -f "$scratch/fixed.har" "$scratch/fixed2.har"
done
[[ $keep == 1 ]] || rm -rf "$scratch"
