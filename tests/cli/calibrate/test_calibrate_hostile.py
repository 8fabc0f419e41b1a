"""calibrate's own edges (issue 41, items 2, 3 and 15-20): its output is never
one of its inputs and is written through no fixed temporary; a signal stops it
and the Python it runs, leaving nothing; numbers that would reach
calibrate.py changed are refused and the others arrive exactly; it runs its
own calibrate.py, not the export folder's; a FIFO of prompts is named as one;
non-finite activations are named, not a traceback."""
from __future__ import annotations

import json
import os
import shutil
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from llm2hef_cli import BIN, FIXTURES, ok
from llm2hef_cli import checked as run
from llm2hef_cli import tree_digest as digest

FIXTURE = FIXTURES / "gpt2-tiny"


EXPORT = ["--cache", 16, "--prefill", 4, "--no-progress"]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "gpt2"
    ok("export", FIXTURE, "-o", out, *EXPORT)
    return out


def calib_file(folder: Path, vocab=64, n=3) -> Path:
    path = folder / "calib.json"
    path.write_text(json.dumps([[(7 * i + k) % vocab for k in range(5 + i)] for i in range(n)]))
    return path


def fresh_export(tmp_path: Path, source=FIXTURE, name="gpt2") -> Path:
    out = tmp_path / name
    ok("export", source, "-o", out, *EXPORT)
    return out


@pytest.mark.parametrize("target", ["model.onnx", "model.onnx.data", "manifest.json", "calibrate.py",
                                    "resources/tokenizer.json", "calib.json"])
def test_calibrate_output_is_never_one_of_its_inputs(tmp_path, target):
    out = fresh_export(tmp_path)
    calib = calib_file(tmp_path)
    before = digest(tmp_path)
    dest = calib if target == "calib.json" else out / target
    r = run("calibrate", out, "--calib-tokens", calib, "--no-simulate", "-o", dest, "--force")
    assert r.returncode == 2, r.stderr
    assert "is the" in r.stderr or "inside" in r.stderr, r.stderr
    assert digest(tmp_path) == before


def test_calibrate_writes_through_no_fixed_temporary(tmp_path):
    out = fresh_export(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    # A link planted where a fixed `<output>.tmp` would be written...
    (out / "quantization.json.tmp").symlink_to(outside / "written-through-the-link")
    # ...and an input of that name.
    planted_input = out / "quantization-report.md.tmp"
    planted_input.write_text(json.dumps([[1, 2, 3], [4, 5, 6, 7]]))
    ok("calibrate", out, "--calib-tokens", planted_input, "--no-simulate")
    assert list(outside.iterdir()) == []
    assert (out / "quantization.json.tmp").is_symlink()
    assert json.loads(planted_input.read_text()) == [[1, 2, 3], [4, 5, 6, 7]]
    assert json.loads((out / "quantization.json").read_text())["version"] >= 1
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]


def python_children_of(export: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--export-dir" in argv and str(export).encode() in argv:
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_calibrate_and_its_python(tmp_path, sig):
    out = fresh_export(tmp_path)
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps([[i % 60 + 1] * 15 for i in range(200)]))
    p = subprocess.Popen([str(BIN), "calibrate", str(out), "--calib-tokens", str(calib), "--no-simulate"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not any("prompt 1/" in line for line in lines) and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert python_children_of(out), "calibrate.py never started"
    p.send_signal(sig)  # to llm2hef alone, not its process group
    p.wait(timeout=60)
    assert p.returncode == -sig, p.returncode
    assert python_children_of(out) == []
    time.sleep(1)
    assert not (out / "quantization.json").exists()
    assert not [e.name for e in out.iterdir() if e.name.startswith(".calibrate-") or ".tmp-" in e.name]


@pytest.mark.parametrize("option,value", [("--min-levels", "nan"), ("--max-weight-drop", "nan"),
                                          ("--min-levels", "inf"), ("--precision-budget", "0.4")])
def test_numbers_that_would_arrive_changed_are_refused(export_dir, tmp_path, option, value):
    r = run("calibrate", export_dir, "--calib-tokens", calib_file(tmp_path), "--no-simulate", "-o",
            tmp_path / "q.json", option, value)
    assert r.returncode == 2 and option in r.stderr, r.stderr


def test_numbers_reach_the_script_exactly(export_dir, tmp_path):
    ok("calibrate", export_dir, "--calib-tokens", calib_file(tmp_path), "--no-simulate", "-o", tmp_path / "q.json",
       "--max-weight-drop", "1e-7", "--min-levels", "33.3")
    rule = json.loads((tmp_path / "q.json").read_text())["rule"]
    assert rule["max_weight_drop"] == 1e-7 and rule["min_levels"] == 33.3, rule


def test_calibrate_runs_its_own_script_not_the_folders(tmp_path):
    out = fresh_export(tmp_path)
    (out / "calibrate.py").write_text("open(%r, 'w').close()\n" % str(tmp_path / "PWNED"))
    r = ok("calibrate", out, "--calib-tokens", calib_file(tmp_path), "--no-simulate")
    assert not (tmp_path / "PWNED").exists()
    assert "differs from the calibrate.py built into this llm2hef" in r.stderr, r.stderr
    assert (out / "quantization.json").is_file()


def test_a_fifo_of_prompts_is_named_as_a_fifo(export_dir, tmp_path):
    fifo = tmp_path / "calib.json"
    os.mkfifo(fifo)
    r = run("calibrate", export_dir, "--calib-tokens", fifo, "--no-simulate", "-o", tmp_path / "q.json",
            timeout=60)
    assert r.returncode in (2, 3) and "FIFO" in r.stderr and "no such file" not in r.stderr, r.stderr


def nan_in_first_weight(ckpt: Path):
    """Sets the first float of the checkpoint's token embedding to NaN, in place."""
    path = ckpt / "model.safetensors"
    data = bytearray(path.read_bytes())
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    name = next(k for k in header if k != "__metadata__" and ("wte" in k or "embed" in k))
    t = header[name]
    assert t["dtype"] == "F32", t
    at = 8 + n + t["data_offsets"][0]
    data[at:at + 4] = struct.pack("<f", float("nan"))
    path.write_bytes(bytes(data))


def test_non_finite_activations_are_named_not_a_traceback(tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(FIXTURE, ckpt)
    nan_in_first_weight(ckpt)
    out = fresh_export(tmp_path, ckpt)
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps([[0, 1, 2, 3], [0, 5, 6]]))
    r = run("calibrate", out, "--calib-tokens", calib, "--no-simulate")
    assert r.returncode == 1, r.stderr
    assert "not finite" in r.stderr and "calibration prompt 0" in r.stderr, r.stderr
