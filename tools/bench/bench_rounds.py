#!/usr/bin/env python3
"""Interleaved rounds of shell commands: min and median wall time and peak RSS.

    python3 tools/bench/bench_rounds.py --rounds 5 \\
        --run 'new=rm -rf /tmp/o && build/llm2hef export CKPT -o /tmp/o --cache 1024 --prefill 96 --no-progress' \\
        --run 'cat=cat /tmp/o/model.onnx.data /tmp/o/resources/* > /dev/null'

Each round runs every command once, in the order given, so that a slow spell
of the machine hits all of them alike. A command's `rm -rf` of its output is
part of its time; keep it cheap or leave it out. Peak RSS is the largest
resident set of any process the command ran (wait4's ru_maxrss), so `sh -c`
wrappers do not hide it. Not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def run_once(command: str) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen(["/bin/sh", "-c", command], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"bench_rounds: exit {code}: {command}")
    return wall, usage.ru_maxrss  # KiB on Linux


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="append", required=True, metavar="LABEL=COMMAND")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1, help="untimed rounds first (page cache, default 1)")
    args = ap.parse_args(argv)
    runs = []
    for spec in args.run:
        label, sep, command = spec.partition("=")
        if not sep or not label or not command:
            ap.error(f"--run {spec!r}: expected LABEL=COMMAND")
        runs.append((label, command))
    for _ in range(args.warmup):
        for _, command in runs:
            run_once(command)
    walls = {label: [] for label, _ in runs}
    rss = {label: 0 for label, _ in runs}
    for r in range(args.rounds):
        for label, command in runs:
            wall, peak = run_once(command)
            walls[label].append(wall)
            rss[label] = max(rss[label], peak)
        print(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{label} {walls[label][-1]:.2f} s" for label, _ in runs),
              file=sys.stderr)
    first = runs[0][0]
    print(f"{'command':<16} {'min s':>8} {'median s':>9} {'peak RSS MiB':>13} {'median / ' + first:>14}")
    for label, _ in runs:
        med = statistics.median(walls[label])
        print(f"{label:<16} {min(walls[label]):>8.2f} {med:>9.2f} {rss[label] / 1024:>13.0f} "
              f"{med / statistics.median(walls[first]):>14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
