#!/usr/bin/env python3
"""`llm2hef calibrate` at the size people export (issue 39): wall time, time
per prompt and peak RSS of the ranges pass (`--no-simulate`) for three
shapes, at caches 512 and 2048, with 8 and 64 calibration prompts; and a check
that the ranges match those of a run at cache 128 on the same prompts.

Shapes:

- smollm2: the real SmolLM2-135M-Instruct (tests/.real-models, fetched by
  tools/install-test-deps.sh);
- qwen2.5-0.5b and llama-3.2-1b: random weights with the released shapes
  (build/tools/bench/make_random_checkpoint --preset NAME, F32).

The prompts are random token ids, 48 to 112 tokens long (the graph runs every
one of the cache's rows whatever the prompt's length, so time and memory do
not depend on it). "Ranges match" compares, for every tensor with one token
axis and no key axis (the residual stream, norm outputs and matmul inputs),
min, max and the 99.9th percentile of |x| with those of the cache-128 run: the
padding rows are inert, so they must agree to float rounding. The attention
scores and softmax have a key axis as long as the cache and are left out.

Peak RSS is the largest resident set of any process of the run (llm2hef, the
Python interpreter, the `llm2hef inputs` it starts), from
getrusage(RUSAGE_CHILDREN) in a fresh child.

    python3 tools/bench/bench_calibrate_scale.py                      # everything (hours on 2 cores)
    python3 tools/bench/bench_calibrate_scale.py --models smollm2 --caches 2048 --prompts 8

Run from the repository with build/llm2hef and make_random_checkpoint built.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

from bench_calibrate import measured, run  # the same runner and peak-RSS probe

REPO = Path(__file__).resolve().parents[2]
GGUF = REPO / "tests" / ".real-models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SHAPES = ("smollm2", "qwen2.5-0.5b", "llama-3.2-1b")
COMPARED_KINDS = ("residual", "norm", "conv_input", "embeddings")


def checkpoint(shape, work, make_checkpoint):
    if shape == "smollm2":
        if not GGUF.is_file():
            sys.exit(f"{GGUF} is absent: tools/install-test-deps.sh fetches it")
        return GGUF
    ckpt = work / f"{shape}-random"
    if not (ckpt / "config.json").exists():
        run([make_checkpoint, "-o", ckpt, "--preset", shape, "--force"])
    return ckpt


def export(llm2hef, ckpt, out, cache):
    if not (out / "manifest.json").exists():
        run([llm2hef, "export", ckpt, "-o", out, "--cache", cache, "--prefill", min(96, cache), "--no-progress",
             "--no-sync", "-q", "--force"])
    return json.loads((out / "manifest.json").read_text())


def ranges_of(q):
    return {r["tensor"]: r for r in q["ranges"] if r["kind"] in COMPARED_KINDS}


def worst_difference(a, b):
    """Largest relative difference of min, max and p99.9 over the tensors both runs recorded."""
    worst = 0.0
    for name in a.keys() & b.keys():
        for key in ("min", "max", "p999_abs"):
            x, y = a[name][key], b[name][key]
            worst = max(worst, abs(x - y) / max(abs(x), abs(y), 1e-30))
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--caches", nargs="+", type=int, default=[512, 2048])
    ap.add_argument("--prompts", nargs="+", type=int, default=[8, 64])
    ap.add_argument("--threads", type=int, default=0, help="calibrate --threads (0: one per core)")
    ap.add_argument("--work", default=os.environ.get("LLM2HEF_BENCH_DIR", "/tmp/llm2hef-bench-calibrate-scale"))
    ap.add_argument("--llm2hef", default=str(REPO / "build" / "llm2hef"))
    ap.add_argument("--make-checkpoint", default=str(REPO / "build" / "tools" / "bench" / "make_random_checkpoint"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    print("| model | cache | prompts | wall | per prompt | peak RSS | calibrate's estimate | ranges vs cache 128 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for shape in args.models:
        ckpt = checkpoint(shape, work, args.make_checkpoint)
        rng = np.random.default_rng(39)
        baseline = {}
        for cache in args.caches:
            out = work / f"{shape}-c{cache}"
            manifest = export(args.llm2hef, ckpt, out, cache)
            vocab = manifest["dims"]["vocab"]
            for n in args.prompts:
                prompts = work / f"{shape}-p{n}.json"
                if not prompts.exists():
                    prompts.write_text(json.dumps([rng.integers(0, vocab, int(rng.integers(48, 113))).tolist()
                                                   for _ in range(n)]))
                q_path = work / f"{shape}-c{cache}-p{n}.json"
                wall, gib, log = measured([args.llm2hef, "calibrate", out, "--calib-tokens", prompts, "--no-simulate",
                                           "-o", q_path, "--force", "--threads", args.threads])
                estimate = next((line.split("about ")[1].split(" GiB")[0] for line in log.splitlines()
                                 if "memory: about" in line), "?")
                q = json.loads(q_path.read_text())
                per_prompt = q["timing"]["ranges_s"] / max(q["calibration"]["prompts"], 1)
                if n not in baseline:
                    base_out = work / f"{shape}-c128"
                    export(args.llm2hef, ckpt, base_out, 128)
                    base_q = work / f"{shape}-c128-p{n}.json"
                    if not base_q.exists():
                        run([args.llm2hef, "calibrate", base_out, "--calib-tokens", prompts, "--no-simulate", "-o",
                             base_q, "--force", "--threads", args.threads])
                    baseline[n] = ranges_of(json.loads(base_q.read_text()))
                diff = worst_difference(ranges_of(q), baseline[n])
                print(f"| {shape} | {cache} | {n} | {wall:.0f} s | {per_prompt:.1f} s | {gib:.2f} GiB | "
                      f"{estimate} GiB | worst relative difference {diff:.1e} |", flush=True)


if __name__ == "__main__":
    main()
