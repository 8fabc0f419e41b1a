#!/usr/bin/env bash
# Wall time and peak resident memory of `llm2hef export` on a random-weight
# GPT-2 checkpoint (gpt2-xl by default: 1.56B parameters, 6.2 GB of F32).
#
# The design target: peak RSS near the largest single tensor (wte), not the
# model size. The checkpoint is built once in the scratch folder and reused;
# each run exports into a fresh output folder, removed afterwards unless
# --keep-output. Results are also appended to SCRATCH/results.tsv.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench_export.sh [options]
  --llm2hef PATH          llm2hef binary (default: build/llm2hef)
  --make-checkpoint PATH  make_random_checkpoint binary (default: build/tools/bench/make_random_checkpoint)
  --scratch DIR           scratch folder (default: $LLM2HEF_BENCH_DIR or /tmp/llm2hef-bench)
  --preset NAME           gpt2-xl | gpt2 | tiny (default: $LLM2HEF_BENCH_PRESET or gpt2-xl)
  --tokenizer-from DIR    real tokenizer to copy into the checkpoint (default: $LLM2HEF_BENCH_TOKENIZER;
                          else a synthetic one)
  --cache N --prefill P   export sizes (default: $LLM2HEF_BENCH_CACHE or 1024, $LLM2HEF_BENCH_PREFILL or 96)
  --rebuild               rebuild the checkpoint even if the scratch folder has one
  --keep-output           keep the exported folder
The page cache is left as it is: the checkpoint is usually hot after it was
just written; drop caches yourself (as root) for a cold-read number.
EOF
}

llm2hef=build/llm2hef
maker=build/tools/bench/make_random_checkpoint
scratch=${LLM2HEF_BENCH_DIR:-/tmp/llm2hef-bench}
preset=${LLM2HEF_BENCH_PRESET:-gpt2-xl}
tokenizer=${LLM2HEF_BENCH_TOKENIZER:-}
cache=${LLM2HEF_BENCH_CACHE:-1024}
prefill=${LLM2HEF_BENCH_PREFILL:-96}
rebuild=0
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --llm2hef) llm2hef=$2; shift 2 ;;
    --make-checkpoint) maker=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --preset) preset=$2; shift 2 ;;
    --tokenizer-from) tokenizer=$2; shift 2 ;;
    --cache) cache=$2; shift 2 ;;
    --prefill) prefill=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    --keep-output) keep=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_export.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

bash "$(cd "$(dirname "$0")/.." && pwd)/apt-install.sh" time   # /usr/bin/time
for bin in "$llm2hef" "$maker"; do
  [[ -x $bin ]] || { echo "bench_export.sh: $bin is not built" >&2; exit 2; }
done

mkdir -p "$scratch"
ckpt=$scratch/$preset-random
out=$scratch/$preset-export
log=$scratch/$preset-time.log

if [[ $rebuild == 1 || ! -f $ckpt/model.safetensors ]]; then
  args=(--preset "$preset" -o "$ckpt" --force)
  [[ -n $tokenizer ]] && args+=(--tokenizer-from "$tokenizer")
  echo "== building $ckpt"
  "$maker" "${args[@]}"
else
  echo "== reusing $ckpt (--rebuild to regenerate)"
fi

rm -rf "$out"
echo "== llm2hef export $ckpt -o $out --cache $cache --prefill $prefill"
status=0
/usr/bin/time -v "$llm2hef" export "$ckpt" -o "$out" --cache "$cache" --prefill "$prefill" --no-progress \
  2> "$log" || status=$?
if [[ $status != 0 ]]; then
  echo "export failed with status $status; stderr:" >&2
  cat "$log" >&2
  exit "$status"
fi

field() { sed -n "s/^[[:space:]]*$1: //p" "$log"; }
json_int() { grep -o "\"$1\": *[0-9]*" "$ckpt/config.json" | grep -o '[0-9]*$'; }
mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
size_of() { if [[ -e $1 ]]; then du -sb "$1" | cut -f1; else echo 0; fi; }

wall=$(field "Elapsed (wall clock) time (h:mm:ss or m:ss)")
rss_kb=$(field "Maximum resident set size (kbytes)")
user=$(field "User time (seconds)")
sys=$(field "System time (seconds)")
vocab=$(json_int vocab_size)
embd=$(json_int n_embd)
largest=$((vocab * embd * 4))  # wte in float32, the largest tensor of a GPT-2
ckpt_bytes=$(size_of "$ckpt/model.safetensors")
onnx=$(size_of "$out/model.onnx")
data=$(size_of "$out/model.onnx.data")
resources=$(size_of "$out/resources")
total=$(size_of "$out")

echo
echo "preset            $preset ($(mb "$ckpt_bytes") of weights)"
echo "wall time         $wall (user ${user}s, system ${sys}s)"
echo "peak RSS          $(mb $((rss_kb * 1024)))  ($(awk -v r="$rss_kb" -v l="$largest" 'BEGIN { printf "%.2f", r * 1024 / l }') x the largest tensor, wte $(mb "$largest"))"
echo "model.onnx        $(mb "$onnx")"
echo "model.onnx.data   $(mb "$data")"
echo "resources/        $(mb "$resources")"
echo "output total      $(mb "$total")"

results=$scratch/results.tsv
[[ -f $results ]] || printf 'date\tpreset\tcache\tprefill\twall\tpeak_rss_kb\tckpt_bytes\toutput_bytes\n' > "$results"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -Is)" "$preset" "$cache" "$prefill" "$wall" "$rss_kb" \
  "$ckpt_bytes" "$total" >> "$results"

if [[ $keep == 0 ]]; then
  rm -rf "$out"
  echo "(output removed; --keep-output to keep it)"
fi
