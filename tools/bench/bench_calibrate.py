#!/usr/bin/env python3
"""Time and peak memory of `llm2hef calibrate` (docs/quantization.md, "Cost").

Two models:

- smollm2: the real SmolLM2-135M-Instruct (tests/.real-models, fetched by
  tools/install-deps.sh), exported at --cache (default 128), calibrated on
  the two chat prompts of tests/fixtures/smollm2-real/calib-tokens.json and
  judged on held-out-tokens.json, as tests/numerics/test_smollm2_real.py does;
- qwen2.5-0.5b: a random-weight checkpoint with Qwen2.5-0.5B's shapes
  (hidden 896, 24 layers, 14/2 heads, vocab 151936; make_random_checkpoint
  --preset qwen2.5-0.5b, F32), exported at --cache, calibrated on --prompts
  random prompts of --tokens tokens and judged on two more.

Peak memory is the largest resident set of any process of the run (llm2hef,
the Python interpreter running calibrate.py, the `llm2hef inputs` it
starts): getrusage(RUSAGE_CHILDREN).ru_maxrss. Wall time includes everything.

    python3 tools/bench/bench_calibrate.py                     # both
    python3 tools/bench/bench_calibrate.py --models smollm2 --cache 256

Run from the repository with build/llm2hef and
build/tools/bench/make_random_checkpoint built.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
GGUF = REPO / "tests" / ".real-models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
REF = REPO / "tests" / "fixtures" / "smollm2-real"


def run(cmd):
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"`{' '.join(map(str, cmd))}` failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def measured(cmd):
    """Wall seconds, peak RSS (GiB) and output of cmd, run in a fresh child so
    that RUSAGE_CHILDREN holds only its processes."""
    probe = ("import resource, subprocess, sys, time\n"
             "t = time.time(); r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
             "sys.stderr.write(r.stdout + r.stderr)\n"
             "print(r.returncode, time.time() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    r = subprocess.run([sys.executable, "-c", probe, *map(str, cmd)], capture_output=True, text=True)
    code, wall, kib = r.stdout.split()
    if code != "0":
        sys.exit(f"`{' '.join(map(str, cmd))}` failed ({code}):\n{r.stderr[-8000:]}")
    return float(wall), int(kib) / 2 ** 20, r.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["smollm2", "qwen2.5-0.5b"], choices=["smollm2", "qwen2.5-0.5b"])
    ap.add_argument("--cache", type=int, default=128)
    ap.add_argument("--prompts", type=int, default=2, help="random calibration prompts for qwen2.5-0.5b")
    ap.add_argument("--tokens", type=int, default=64, help="tokens per random prompt")
    ap.add_argument("--work", default=os.environ.get("LLM2HEF_BENCH_DIR", "/tmp/llm2hef-bench-calibrate"))
    ap.add_argument("--llm2hef", default=str(REPO / "build" / "llm2hef"))
    ap.add_argument("--make-checkpoint", default=str(REPO / "build" / "tools" / "bench" / "make_random_checkpoint"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for model in args.models:
        out = work / f"{model}-c{args.cache}"
        if out.exists():
            shutil.rmtree(out)
        if model == "smollm2":
            if not GGUF.is_file():
                print(f"skipped smollm2: {GGUF} is absent (tools/install-deps.sh)")
                continue
            run([args.llm2hef, "export", GGUF, "-o", out, "--cache", args.cache, "--prefill", 32, "--no-progress"])
            calib, held = REF / "calib-tokens.json", REF / "held-out-tokens.json"
            extra = []
        else:
            ckpt = work / "qwen2.5-0.5b-random"
            if not (ckpt / "config.json").exists():
                run([args.make_checkpoint, "-o", ckpt, "--preset", "qwen2.5-0.5b", "--force"])
            run([args.llm2hef, "export", ckpt, "-o", out, "--cache", args.cache, "--prefill", 32, "--no-progress"])
            vocab = json.loads((out / "manifest.json").read_text())["dims"]["vocab"]
            rng = np.random.default_rng(0)
            calib, held = work / "qwen-calib.json", work / "qwen-held.json"
            calib.write_text(json.dumps([rng.integers(0, vocab, args.tokens).tolist() for _ in range(args.prompts)]))
            held.write_text(json.dumps([rng.integers(0, vocab, args.tokens).tolist() for _ in range(2)]))
            extra = ["--greedy-steps", 4]
        cmd = [args.llm2hef, "calibrate", out, "--calib-tokens", calib, "--eval-tokens", held,
               "--sensitivity-prompts", 1, *extra]
        wall, gib, _ = measured(cmd)
        q = json.loads((out / "quantization.json").read_text())
        size = (out / "model.onnx.data").stat().st_size / 2 ** 30
        rows.append((model, args.cache, q["calibration"]["prompts"], q["calibration"]["tokens"], size, wall, gib,
                     q["timing"]))
        shutil.rmtree(out)
    print("| model | cache | calibration prompts (tokens) | model.onnx.data | wall | peak RSS | ranges / sensitivity / "
          "simulation |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for model, cache, n, tok, size, wall, gib, t in rows:
        print(f"| {model} | {cache} | {n} ({tok}) | {size:.2f} GiB | {wall:.0f} s | {gib:.2f} GiB | "
              f"{t['ranges_s']:.0f} / {t['sensitivity_s']:.0f} / {t['simulation_s']:.0f} s |")


if __name__ == "__main__":
    main()
