"""What the gemma2, gemma3 and olmo2 adapters refuse: exit 4 (unsupported
model) with a message naming the config key and its value, and no output
folder left behind. Each case copies a committed fixture
(tools/fixtures/make_post_norm_fixtures.py) and changes one key of its
config.json; the unchanged copy must export, so the refusal is the change's.

The binary comes from $LLM2HEF_BIN (ctest sets it), else build/llm2hef.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
TIMEOUT_S = 300


def run(args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN)] + [str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT_S)


def variant(tmp_path: Path, fixture: str, change) -> Path:
    dst = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, dst)
    cfg = json.loads((dst / "config.json").read_text())
    change(cfg)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def export(model: Path, out: Path, cache: int) -> subprocess.CompletedProcess:
    return run(["export", model, "-o", out, "--cache", cache, "--prefill", 8])


def assert_refused(proc, out: Path, *needles: str) -> None:
    text = proc.stdout + proc.stderr
    assert proc.returncode == 4, f"exit {proc.returncode}, expected 4 (unsupported)\n{text}"
    for n in needles:
        assert n in text, f"{n!r} not in the message:\n{text}"
    assert not out.exists(), "a refused export left its output folder behind"


def setter(key, value):
    def change(cfg):
        cfg[key] = value
    return change


def rope_type(layer_type, value):
    def change(cfg):
        cfg["rope_parameters"][layer_type]["rope_type"] = value
    return change


def layer_type(i, value):
    def change(cfg):
        cfg["layer_types"][i] = value
    return change


CASES = [
    # fixture, change, cache, what the message must name
    ("gemma3-tiny", setter("hidden_activation", "gelu"), 32, ["hidden_activation", "'gelu'"]),
    ("gemma3-tiny", setter("use_bidirectional_attention", True), 32, ["use_bidirectional_attention", "true"]),
    ("gemma3-tiny", setter("attention_bias", True), 32, ["attention_bias", "true"]),
    ("gemma3-tiny", layer_type(1, "chunked_attention"), 32, ["layer_types", "'chunked_attention'"]),
    ("gemma3-tiny", rope_type("full_attention", "yarn"), 32, ["rope_type", "'yarn'", "full_attention"]),
    ("gemma3-tiny", setter("sliding_window", 16), 32,
     ["sliding_window", "16", "--cache 32", "largest exact cache is 16"]),
    ("gemma2-tiny", setter("hidden_activation", "gelu_new"), 32, ["hidden_activation", "'gelu_new'"]),
    ("gemma2-tiny", setter("sliding_window", 31), 32, ["sliding_window", "31", "largest exact cache is 31"]),
    ("olmo2-tiny", setter("hidden_act", "relu"), 32, ["hidden_act", "'relu'"]),
    ("olmo2-tiny", setter("attention_bias", True), 32, ["attention_bias", "true"]),
    ("olmo2-tiny", setter("rope_parameters", {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0}), 32,
     ["rope_type", "'yarn'"]),
]


@pytest.mark.parametrize("fixture,change,cache,needles", CASES,
                         ids=[f"{c[0]}-{'-'.join(c[3][:2])}" for c in CASES])
def test_refused_naming_key_and_value(fixture, change, cache, needles, tmp_path):
    out = tmp_path / "out"
    assert_refused(export(variant(tmp_path, fixture, change), out, cache), out, *needles)


@pytest.mark.parametrize("fixture", ["gemma3-tiny", "gemma2-tiny", "olmo2-tiny"])
def test_unchanged_copy_exports(fixture, tmp_path):
    out = tmp_path / "out"
    proc = export(variant(tmp_path, fixture, lambda cfg: None), out, 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cache_above_the_window_is_refused(tmp_path):
    """gemma3-window slides over 32 positions: --cache 32 is exact, 64 refused,
    naming the window and the largest exact cache; inspect says the same."""
    out = tmp_path / "out"
    assert_refused(export(FIXTURES / "gemma3-window", out, 64), out, "sliding_window", "32", "--cache 64",
                   "largest exact cache is 32")
    proc = run(["inspect", FIXTURES / "gemma3-window", "--cache", 64])
    assert proc.returncode == 4 and "largest exact cache is 32" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    ok = run(["inspect", FIXTURES / "gemma3-window", "--cache", 32])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "every layer is global and exact" in ok.stdout, ok.stdout


def test_band_option_is_gemma_only(tmp_path):
    """--sliding-window is an option of the Gemma adapters: olmo2 (no sliding
    layers) rejects it as a usage error; `refuse` keeps the refusal."""
    out = tmp_path / "out"
    proc = run(["export", FIXTURES / "olmo2-tiny", "-o", out, "--cache", 32, "--prefill", 8,
                "--sliding-window", "band"])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--sliding-window" in proc.stdout + proc.stderr
    proc = run(["export", FIXTURES / "gemma3-window", "-o", out, "--cache", 64, "--prefill", 8,
                "--sliding-window", "refuse"])
    assert_refused(proc, out, "largest exact cache is 32", "--sliding-window band")
