#!/usr/bin/env bash
# Wall time and peak RSS of `llm2hef hef inspect` (and check, inspect
# --verify-all, set-config) on a synthetic multi-GB HEF written sparse by
# make_big_hef.py. The point: inspect and check read the header, the proto
# and the small resources only, so their time and memory do not grow with
# the file; --verify-all and set-config stream the whole file.
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: bench_hef.sh [--llm2hef PATH] [--scratch DIR] [--gib N] [--full]
  --llm2hef PATH   llm2hef binary (default: build/llm2hef)
  --scratch DIR    scratch folder (default: $LLM2HEF_BENCH_DIR or /tmp/llm2hef-bench)
  --gib N          HEF size in GiB (default 4)
  --full           also time inspect --verify-all and set-config (read/copy the whole file;
                   set-config needs N GiB of free disk: its output is not sparse)
EOF2
}

here=$(cd "$(dirname "$0")" && pwd)
llm2hef=build/llm2hef
scratch=${LLM2HEF_BENCH_DIR:-/tmp/llm2hef-bench}
gib=4
full=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --llm2hef) llm2hef=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --gib) gib=$2; shift 2 ;;
    --full) full=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_hef.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
bash "$here/../apt-install.sh" time   # /usr/bin/time
[[ -x $llm2hef ]] || { echo "bench_hef.sh: $llm2hef is not built" >&2; exit 2; }

mkdir -p "$scratch"
hef=$scratch/big-$gib.hef
log=$scratch/hef-time.log
echo "== writing $hef (sparse)"
python3 "$here/make_big_hef.py" "$hef" --gib "$gib"

measure() {  # label, command...
  local label=$1; shift
  local status=0
  /usr/bin/time -v "$@" > /dev/null 2> "$log" || status=$?
  if [[ $status -gt 1 ]]; then echo "$label failed with status $status:" >&2; cat "$log" >&2; exit "$status"; fi
  local wall rss
  wall=$(sed -n 's/^[[:space:]]*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$log")
  rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$log")
  printf '%-28s wall %-10s peak RSS %6.1f MB  (exit %s)\n' "$label" "$wall" "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$status"
}

echo "file size: $(stat -c %s "$hef") bytes"
measure "hef inspect" "$llm2hef" hef inspect "$hef" --no-progress
measure "hef inspect --json" "$llm2hef" hef inspect "$hef" --json --no-progress
measure "hef check" "$llm2hef" hef check "$hef"
if [[ $full == 1 ]]; then
  measure "hef inspect --verify-all" "$llm2hef" hef inspect "$hef" --verify-all --no-progress
  cfg=$scratch/new-hailo-config.json
  echo '{"eos_token_id": 2, "stop_token_id": [2], "pre_process_params": {"kv_cache_size": 2048, "num_attention_heads": 12, "num_key_value_heads": 2, "prefill_input_tokens_count": 96}}' > "$cfg"
  measure "hef set-config" "$llm2hef" hef set-config "$hef" "$cfg" -o "$scratch/patched.hef" --force --no-progress
  measure "hef inspect --verify-all (out)" "$llm2hef" hef inspect "$scratch/patched.hef" --verify-all --no-progress
  rm -f "$scratch/patched.hef"
fi
rm -f "$hef"
