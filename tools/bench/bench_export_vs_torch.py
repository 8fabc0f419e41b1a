#!/usr/bin/env python3
"""llm2hef export next to a plain copy of its output and next to transformers
+ torch.onnx.export, on random checkpoints of published shapes.

    python3 tools/bench/bench_export_vs_torch.py --work /var/tmp/llm2hef-bench --rounds 3
    python3 tools/bench/bench_export_vs_torch.py --vocab-sweep
    python3 tools/bench/bench_export_vs_torch.py --shapes llama-3.2-1b-l1 --rounds 5 --no-torch --threads-sweep 1,2

For each shape (GPT-2 XL in F32, Qwen2.5-0.5B and Llama-3.2-1B in BF16) the
checkpoint is made once by build/tools/bench/make_random_checkpoint and read
once before timing (the page cache holds it, as after a download). Each
round then runs, in this order:

  llm2hef          `llm2hef export CKPT -o OUT` with the defaults (durable: flushed before the rename)
  llm2hef-nosync   the same with --no-sync
  cat              `cat` of every file llm2hef wrote into one file (the bytes, read and written once)
  cat+fsync        the same, then `sync FILE` (fsync of the copy): the floor of a durable export
  torch            tools/bench/torch_onnx_export.py with --torch-python (skipped when that
                   interpreter lacks torch, transformers or onnxscript)

Outside the timing: the disk is synced before each command, so that none pays
for the previous one's unflushed writes; the checkpoint is read again before
each command that reads it and outputs are deleted once measured, so that the
checkpoint stays in the page cache even when it and the outputs exceed it;
before cat, the checkpoint is evicted (cat does not read it), so that cat has
the memory llm2hef had: its input cached and room for what it writes. Reported: min
and median wall time, peak RSS of the largest process, and the ratios the
docs/benchmarks.md quotes (durable / --no-sync, durable / cat+fsync).

--threads-sweep 1,2,4 adds `llm2hef-tN` rows (--no-sync --threads N) to the
same interleaved rounds, and checks once, untimed, that every thread count
writes the same bytes as --threads 1 (cmp of every file).

llama-3.2-1b-l1 is Llama-3.2-1B's width and full 128,256 vocabulary with one
layer (2.3 GB written): the shape issue 31 measured durability on.
--delete-checkpoints removes each checkpoint once its shape is measured. Needs
several GB of free disk in --work (GPT-2 XL: 6.2 GB of checkpoint, 6.6 GB per
output). Not part of the test suite.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_rounds import run_once  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SHAPES = {  # name: (make_random_checkpoint preset, dtype, extra arguments)
    "gpt2-xl": ("gpt2-xl", "F32", []),
    "qwen2.5-0.5b": ("qwen2.5-0.5b", "BF16", []),
    "llama-3.2-1b": ("llama-3.2-1b", "BF16", []),
    "llama-3.2-1b-l1": ("llama-3.2-1b", "BF16", ["--n-layer", "1"]),
}
DEFAULT_SHAPES = "gpt2-xl,qwen2.5-0.5b,llama-3.2-1b"
SWEEP_VOCABS = [16384, 32768, 65536, 131072]


def sh(command: str) -> None:
    subprocess.run(["/bin/sh", "-c", command], check=True, stdout=subprocess.DEVNULL)


def make_checkpoint(maker: Path, out: Path, preset: str, dtype: str, extra: list[str]) -> None:
    if (out / "model.safetensors").is_file():
        return
    subprocess.run([str(maker), "--preset", preset, "--dtype", dtype, "-o", str(out), "--force", *extra], check=True)


def evict(folder: Path) -> None:
    """Drops a folder's files from the page cache (posix_fadvise DONTNEED)."""
    for f in folder.rglob("*"):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def torch_usable(python: str) -> bool:
    probe = "import torch, transformers, onnxscript"
    return subprocess.run([python, "-c", probe], capture_output=True).returncode == 0


def folder_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def time_rounds(runs: list[tuple[str, str, str, str]], rounds: int) -> dict[str, tuple[list[float], int]]:
    """runs: (label, untimed preparation, timed command, untimed cleanup), in
    interleaved rounds."""
    walls = {label: [] for label, *_ in runs}
    rss = {label: 0 for label, *_ in runs}
    for k in range(rounds):
        line = []
        for label, prepare, command, cleanup in runs:
            # Every command starts with no dirty pages: the previous one's
            # unflushed output must not slow its writes down.
            sh(f"{prepare} && sync")
            wall, peak = run_once(command)
            walls[label].append(wall)
            rss[label] = max(rss[label], peak)
            line.append(f"{label} {wall:.2f} s")
            sh(cleanup)
        print(f"  round {k + 1}/{rounds}: " + ", ".join(line), flush=True)
    return {label: (walls[label], rss[label]) for label in walls}


def report(title: str, results: dict[str, tuple[list[float], int]], out_bytes: int) -> dict[str, float]:
    medians = {label: statistics.median(w) for label, (w, _) in results.items()}
    print(f"\n{title} (output {out_bytes / 1e9:.2f} GB)")
    print(f"{'command':<16}{'min s':>8}{'median s':>10}{'peak RSS MiB':>14}{'median / cat':>14}")
    for label, (w, peak) in results.items():
        ratio = medians[label] / medians["cat"] if "cat" in medians else float("nan")
        print(f"{label:<16}{min(w):>8.2f}{medians[label]:>10.2f}{peak / 1024:>14.0f}{ratio:>14.2f}")
    if "torch" in medians:
        print(f"torch / llm2hef: {medians['torch'] / medians['llm2hef']:.1f}x (durable), "
              f"{medians['torch'] / medians['llm2hef-nosync']:.1f}x (--no-sync)")
    return medians


def bench_shapes(args, work: Path, use_torch: bool) -> None:
    summary = []
    for preset in args.shapes.split(","):
        if preset not in SHAPES:
            raise SystemExit(f"unknown shape {preset!r} (one of {', '.join(SHAPES)})")
        ckpt = work / f"ckpt-{preset}"
        maker_preset, dtype, extra = SHAPES[preset]
        make_checkpoint(args.maker, ckpt, maker_preset, dtype, extra)
        if args.drop_caches:  # start each shape from an empty page cache, not one the last shape filled
            sh("sync && echo 3 > /proc/sys/vm/drop_caches")
        sh(f"cat '{ckpt}'/* > /dev/null")  # into the page cache
        out, out_fast, out_torch, copy = (work / n for n in ("out", "out-nosync", "out-torch", "cat.out"))
        # Outputs are deleted as soon as they are measured, and the checkpoint
        # read again (untimed) before each command that reads it: GPT-2 XL's
        # checkpoint and outputs together exceed the page cache, and a
        # checkpoint evicted by the outputs would be timed from the disk.
        warm = f"cat '{ckpt}'/* > /dev/null"
        export = f"'{args.bin}' export '{ckpt}' --no-progress -o"
        quiet = ">/dev/null 2>&1"
        runs = [
            ("llm2hef", warm, f"{export} '{out}' {quiet}", f"rm -rf '{out}'"),
            ("llm2hef-nosync", warm, f"{export} '{out_fast}' --no-sync {quiet}", "true"),
            # cat gets the page cache llm2hef had: its input cached, the
            # checkpoint (which it does not read) evicted.
            ("cat", f"'{sys.executable}' '{Path(__file__).resolve()}' --evict '{ckpt}'",
             f"find '{out_fast}' -type f -exec cat {{}} + > '{copy}'", f"rm -rf '{copy}'"),
            ("cat+fsync", f"'{sys.executable}' '{Path(__file__).resolve()}' --evict '{ckpt}'",
             f"find '{out_fast}' -type f -exec cat {{}} + > '{copy}' && sync '{copy}'",
             f"rm -rf '{copy}' '{out_fast}'"),
        ]
        threads = [int(t) for t in args.threads_sweep.split(",")] if args.threads_sweep else []
        for t in threads:
            out_t = work / f"out-t{t}"
            runs.append((f"llm2hef-t{t}", f"{warm} && rm -rf '{out_t}'",
                         f"{export} '{out_t}' --no-sync --threads {t} {quiet}", f"rm -rf '{out_t}'"))
        if use_torch:
            script = REPO / "tools" / "bench" / "torch_onnx_export.py"
            runs.append(("torch", warm, f"'{args.torch_python}' '{script}' '{ckpt}' '{out_torch}' {quiet}",
                         f"rm -rf '{out_torch}'"))
        for path in (out, out_fast, out_torch, copy):
            sh(f"rm -rf '{path}'")
        if threads:
            check_threads_identical(args, ckpt, work, threads)
        print(f"{preset}: {args.rounds} rounds", flush=True)
        results = time_rounds(runs, args.rounds)
        sh(f"{export} '{out_fast}' --no-sync {quiet}")  # once more, for its size
        out_bytes = folder_bytes(out_fast)
        shutil.rmtree(out_fast)
        medians = report(preset, results, out_bytes)
        summary.append((preset, medians))
        if args.delete_checkpoints:
            shutil.rmtree(ckpt)
    print("\nsummary (medians, s)")
    print(f"{'shape':<16}{'llm2hef':>9}{'--no-sync':>11}{'cat':>7}{'cat+fsync':>11}{'torch':>8}{'vs cat':>8}"
          f"{'durable/nosync':>16}{'durable/cat+fsync':>19}{'torch/llm2hef':>15}")
    for preset, m in summary:
        torch = m.get("torch", float("nan"))
        print(f"{preset:<16}{m['llm2hef']:>9.2f}{m['llm2hef-nosync']:>11.2f}{m['cat']:>7.2f}{m['cat+fsync']:>11.2f}"
              f"{torch:>8.2f}{m['llm2hef-nosync'] / m['cat']:>8.2f}{m['llm2hef'] / m['llm2hef-nosync']:>16.2f}"
              f"{m['llm2hef'] / m['cat+fsync']:>19.2f}{torch / m['llm2hef']:>15.1f}")
        sweep = [(k, v) for k, v in m.items() if k.startswith("llm2hef-t")]
        if sweep:
            base = m.get("llm2hef-t1", sweep[0][1])
            print("  threads: " + ", ".join(f"{k[len('llm2hef-t'):]}: {v:.2f} s ({base / v:.2f}x)" for k, v in sweep))


def check_threads_identical(args, ckpt: Path, work: Path, threads: list[int]) -> None:
    """Untimed: every --threads N writes the bytes --threads 1 writes."""
    ref = work / "out-identical-ref"
    sh(f"rm -rf '{ref}' && '{args.bin}' export '{ckpt}' --no-progress --no-sync --threads 1 -o '{ref}' >/dev/null 2>&1")
    for t in threads:
        other = work / f"out-identical-t{t}"
        sh(f"rm -rf '{other}' && '{args.bin}' export '{ckpt}' --no-progress --no-sync --threads {t} -o '{other}'"
           " >/dev/null 2>&1")
        # manifest.json records the checkpoint's path only, never the thread count: all files must match
        diff = subprocess.run(["diff", "-rq", str(ref), str(other)], capture_output=True, text=True)
        if diff.returncode != 0:
            raise SystemExit(f"--threads {t} wrote other bytes than --threads 1:\n{diff.stdout}")
        shutil.rmtree(other)
        print(f"  --threads {t}: byte-identical to --threads 1", flush=True)
    shutil.rmtree(ref)


def bench_vocab_sweep(args, work: Path) -> None:
    """One-layer GPT-2 shapes that differ only in vocabulary: time per byte should not grow."""
    rows = []
    for vocab in SWEEP_VOCABS:
        ckpt = work / f"ckpt-sweep-{vocab}"
        make_checkpoint(args.maker, ckpt, "gpt2", "BF16", ["--n-layer", "1", "--vocab", str(vocab)])
        sh(f"cat '{ckpt}'/* > /dev/null")
        out = work / f"out-sweep-{vocab}"
        runs = [("llm2hef-nosync", f"rm -rf '{out}'",
                 f"'{args.bin}' export '{ckpt}' --no-progress --no-sync -o '{out}' >/dev/null 2>&1", "true")]
        print(f"vocab {vocab}: {args.rounds} rounds", flush=True)
        (walls, _), = time_rounds(runs, args.rounds).values()
        rows.append((vocab, statistics.median(walls), folder_bytes(out)))
        shutil.rmtree(out, ignore_errors=True)
    print(f"\n{'vocab':>8}{'median s':>10}{'output MB':>11}{'s per GB':>10}")
    for vocab, wall, nbytes in rows:
        print(f"{vocab:>8}{wall:>10.2f}{nbytes / 1e6:>11.0f}{wall / (nbytes / 1e9):>10.2f}")
    (v0, t0, b0), (v1, t1, b1) = rows[0], rows[-1]
    print(f"{v0} -> {v1}: {t1 / t0:.2f}x the time for {b1 / b0:.2f}x the bytes "
          f"({(t1 / t0) / (b1 / b0):.2f}x of linear)")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--work", type=Path, default=Path("/var/tmp/llm2hef-bench"),
                    help="folder for checkpoints and outputs (default /var/tmp/llm2hef-bench)")
    ap.add_argument("--shapes", default=DEFAULT_SHAPES,
                    help=f"comma-separated, of {', '.join(SHAPES)} (default {DEFAULT_SHAPES})")
    ap.add_argument("--threads-sweep", default="", metavar="N,N,...",
                    help="also time --no-sync --threads N for each N (and check the outputs are identical)")
    ap.add_argument("--delete-checkpoints", action="store_true", help="remove each checkpoint once measured")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", type=Path, default=REPO / "build" / "llm2hef")
    ap.add_argument("--maker", type=Path, default=REPO / "build" / "tools" / "bench" / "make_random_checkpoint")
    ap.add_argument("--torch-python", default=sys.executable,
                    help="interpreter with torch, transformers and onnxscript (default: this one)")
    ap.add_argument("--no-torch", action="store_true", help="skip the torch.onnx.export runs")
    ap.add_argument("--drop-caches", action="store_true",
                    help="empty the page cache before each shape (root only; /proc/sys/vm/drop_caches)")
    ap.add_argument("--vocab-sweep", action="store_true",
                    help="instead: one-layer GPT-2 BF16 checkpoints, vocabulary 16384 to 131072, --no-sync")
    ap.add_argument("--evict", type=Path, help=argparse.SUPPRESS)  # internal: evict(FOLDER) and exit
    args = ap.parse_args(argv)
    if args.evict:
        evict(args.evict)
        return 0
    for tool in (args.bin, args.maker):
        if not tool.is_file():
            raise SystemExit(f"{tool}: not built (cmake --build build)")
    args.bin, args.maker = args.bin.resolve(), args.maker.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.vocab_sweep:
        bench_vocab_sweep(args, args.work)
        return 0
    use_torch = not args.no_torch and torch_usable(args.torch_python)
    if not args.no_torch and not use_torch:
        print(f"{args.torch_python}: no torch/transformers/onnxscript; the torch column is left out", flush=True)
    bench_shapes(args, args.work, use_torch)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
