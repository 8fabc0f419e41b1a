#!/usr/bin/env bash
# One fuzzer's CI smoke run: FUZZER [libFuzzer arguments...].
#
# A finding on the CI machine is lost with it (the crash file is written in
# its build folder) and a long log is cut, so on a failure this prints, last,
# what replays it anywhere: libFuzzer's seed and every input it saved
# (crash-, leak-, timeout-, oom-), base64-encoded, with the command that
# feeds it back to the same fuzzer. The inputs stay in a temporary folder,
# which the output names; it is removed after a clean run.
set -uo pipefail
fuzzer=$1
shift
name=$(basename "$fuzzer")
artifacts=$(mktemp -d "${TMPDIR:-/tmp}/$name-smoke.XXXXXX")

"$fuzzer" -artifact_prefix="$artifacts/" "$@" 2>&1 | tee "$artifacts/log"
rc=${PIPESTATUS[0]}
if [[ $rc -eq 0 ]]; then
  rm -rf "$artifacts"
  exit 0
fi

echo "==== $name failed (exit $rc); $(grep -m1 -o 'Seed: [0-9]*' "$artifacts/log" || echo 'seed not printed');" \
  "log and inputs in $artifacts"
for input in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
  [[ -f $input ]] || continue
  size=$(stat -c %s "$input")
  echo "==== input $(basename "$input") ($size bytes)"
  if [[ $size -le 65536 ]]; then
    echo "replay: base64 -d > input.bin <<'B64'"
    base64 "$input"
    echo "B64"
    echo "        build-fuzz/tests/fuzz/$name input.bin"
  else
    echo "(larger than 64 KiB: not printed)"
  fi
done
exit "$rc"
