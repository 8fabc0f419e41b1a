#!/usr/bin/env bash
# Parsing cost against input size (issue 12, classes 10 and 11): wall time
# and peak RSS of each reader on inputs of doubling size, written by
# make_parse_inputs.py. Linear parsing shows as time doubling with the size;
# bounded memory as peak RSS a small multiple of the JSON it reads.
# Not part of the test suite (minutes, and timing depends on the machine).
set -euo pipefail

usage() {
  cat <<'EOF2'
Usage: bench_parse.sh [--llm2hef PATH] [--scratch DIR] [--quick] [--only KIND]
  --llm2hef PATH   llm2hef binary (default: build/llm2hef)
  --scratch DIR    scratch folder (default: $LLM2HEF_BENCH_DIR or /tmp/llm2hef-bench-parse)
  --quick          two sizes per kind instead of four
  --only KIND      one of: header hn hef tokenizer hnmem
Prints: kind, size, input MB, command, wall seconds, CPU seconds (user+sys), peak RSS MB.
CPU seconds are the figure to compare on a shared machine.

Measured 2026-12-03 on this project's 2-core machine (heavily shared: CPU
seconds; before = main at 450e62c/f4aad6c, after = this change):
  HN chain 16,000 layers (6.5 MB)   har inspect   2.71 s -> 0.43 s CPU
  HN chain 64,000 layers (26 MB)    har inspect   ~43 s (quadratic) -> 2.04 s CPU, 199 MB
  HEF, 40,000 resources (1.7 MB)    hef inspect   1.82 s -> 0.05 s CPU
  tokenizer.json 24 / 47 / 95 MB    export peak   301 / 569 / 1122 MB -> 186 / 356 / 696 MB
                                    inspect peak  275 / 538 / 1064 MB -> 122 / 232 / 453 MB
  HN 6 / 12 MB                      har fix peak  91 / 170 MB -> 55 / 98 MB
EOF2
}

here=$(cd "$(dirname "$0")" && pwd)
llm2hef=build/llm2hef
scratch=${LLM2HEF_BENCH_DIR:-/tmp/llm2hef-bench-parse}
quick=0
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --llm2hef) llm2hef=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) only=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_parse.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
bash "$here/../apt-install.sh" time   # /usr/bin/time
[[ -x $llm2hef ]] || { echo "bench_parse.sh: $llm2hef is not built" >&2; exit 2; }
llm2hef=$(cd "$(dirname "$llm2hef")" && pwd)/$(basename "$llm2hef")
gen="python3 $here/make_parse_inputs.py"
mkdir -p "$scratch"

sizes() {  # the doubling series for one kind: four sizes, or the two largest with --quick
  if [[ $quick == 1 ]]; then echo "${@: -2}"; else echo "$@"; fi
}
wanted() { [[ -z $only || $only == "$1" ]]; }

mb() { python3 -c "import os,sys; print('%.1f' % (os.path.getsize(sys.argv[1]) / 1e6))" "$1"; }

# run KIND SIZE INPUT_FILE LABEL CMD...: one row; the command's own exit status is shown when not 0.
run() {
  local kind=$1 size=$2 input=$3 label=$4
  shift 4
  local log=$scratch/time.log rc=0
  /usr/bin/time -f "%e %U %S %M" -o "$log" "$@" >/dev/null 2>"$scratch/stderr.log" || rc=$?
  read -r wall user sys rss < <(tail -n 1 "$log") || true
  printf "%-10s %9s %8s  %-26s %8s s %8s s %9.1f MB%s\n" "$kind" "$size" "$(mb "$input")" "$label" "$wall" \
    "$(python3 -c "print('%.2f' % ($user + $sys))")" "$(python3 -c "print($rss / 1024)")" \
    "$([[ $rc == 0 ]] || echo "  (exit $rc: $(head -c 160 "$scratch/stderr.log"))")"
}

printf "%-10s %9s %8s  %-26s %10s %10s %12s\n" kind size "in MB" command wall CPU "peak RSS"

if wanted header; then  # safetensors header: N tensors
  for n in $(sizes 10000 20000 40000 80000); do
    d=$scratch/header-$n
    $gen safetensors "$d" --tensors "$n"
    run header "$n" "$d/model.safetensors" "inspect" "$llm2hef" inspect "$d" --cache 64 --prefill 16
    rm -rf "$d"
  done
fi

if wanted hn; then  # HN chain of N layers
  for n in $(sizes 8000 16000 32000 64000); do
    h=$scratch/chain-$n.har
    $gen har "$h" --layers "$n"
    run hn "$n" "$h" "har inspect" "$llm2hef" har inspect "$h"
    run hn "$n" "$h" "har lines --for optimize" "$llm2hef" har lines "$h" --for optimize --pe-width 4
    run hn "$n" "$h" "har fix" "$llm2hef" har fix "$h" -o "$scratch/fixed.har" --force
    rm -f "$h" "$scratch/fixed.har"
  done
fi

if wanted hef; then  # HEF: extra network groups (proto size), many resources, a large tokenizer resource
  for g in $(sizes 250 500 1000 2000); do
    f=$scratch/groups-$g.hef
    $gen hef "$f" --groups "$g"
    run hef-groups "$g" "$f" "hef inspect" "$llm2hef" hef inspect "$f"
    run hef-groups "$g" "$f" "hef check" "$llm2hef" hef check "$f"
    rm -f "$f"
  done
  for r in $(sizes 5000 10000 20000 40000); do
    f=$scratch/resources-$r.hef
    $gen hef "$f" --resources "$r"
    run hef-res "$r" "$f" "hef inspect" "$llm2hef" hef inspect "$f"
    rm -f "$f"
  done
  for t in $(sizes 4 8 16 32); do
    f=$scratch/tok-$t.hef
    $gen hef "$f" --tokenizer-mb "$t"
    run hef-tok-MB "$t" "$f" "hef check" "$llm2hef" hef check "$f"
    rm -f "$f"
  done
fi

if wanted tokenizer; then  # tokenizer.json of M MB in a gpt2-tiny checkpoint
  for m in $(sizes 12.5 25 50 100); do
    d=$scratch/tok-$m
    $gen tokenizer "$d" --mb "$m"
    run tokenizer "$m" "$d/tokenizer.json" "inspect" "$llm2hef" inspect "$d" --cache 64 --prefill 16
    run tokenizer "$m" "$d/tokenizer.json" "export" "$llm2hef" export "$d" -o "$scratch/out" --cache 64 --prefill 16 \
      --force --no-progress
    rm -rf "$d" "$scratch/out"
  done
fi

if wanted hnmem; then  # HN of M MB (peak memory of har fix)
  for m in $(sizes 12.5 25 50 100); do
    h=$scratch/hn-$m.har
    $gen hn "$h" --mb "$m"
    run hn-MB "$m" "$h" "har inspect" "$llm2hef" har inspect "$h"
    run hn-MB "$m" "$h" "har fix" "$llm2hef" har fix "$h" -o "$scratch/fixed.har" --force
    rm -f "$h" "$scratch/fixed.har"
  done
fi
