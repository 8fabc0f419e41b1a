"""`llm2hef inspect` on the committed fixtures: adapter, sizes, memory, refusals."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"


def inspect(*args):
    r = subprocess.run([str(BIN), "inspect", *map(str, args)], capture_output=True, text=True, timeout=120)
    return r


@pytest.mark.parametrize("fixture,adapter", [("gpt2-tiny", "gpt2"), ("qwen2-tiny", "qwen2"), ("llama3-tiny", "llama"),
                                             ("smollm3-tiny", "smollm3"), ("qwen3-tiny", "qwen3")])
def test_reports_adapter_dims_and_memory(fixture, adapter):
    r = inspect(FIXTURES / fixture, "--cache", 32, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    cfg = json.loads((FIXTURES / fixture / "config.json").read_text())
    assert rep["adapter"]["name"] == adapter
    assert rep["supported"] is True
    assert rep["dims"]["vocab"] == cfg["vocab_size"]
    d, mem = rep["dims"], rep["memory"]
    assert mem["kv_cache_bytes"] == 2 * d["layers"] * d["heads"] * d["head_dim"] * 32
    assert mem["embeddings_bin_bytes"] == 2 * d["vocab"] * d["hidden"]
    assert mem["fits"] is True and mem["total_bytes"] < mem["device_bytes"]
    assert rep["rewrites"]


def test_kv_cache_grows_with_the_cache():
    small = json.loads(inspect(FIXTURES / "qwen2-tiny", "--cache", 32, "--json").stdout)
    large = json.loads(inspect(FIXTURES / "qwen2-tiny", "--cache", 64, "--json").stdout)
    assert large["memory"]["kv_cache_bytes"] == 2 * small["memory"]["kv_cache_bytes"]


def test_sharded_head_is_reported():
    r = inspect(FIXTURES / "llama-bigvocab", "--cache", 32)
    assert r.returncode == 0, r.stderr
    assert "2 x 20480" in r.stdout


def test_smollm3_nope_layers_are_listed():
    rep = json.loads(inspect(FIXTURES / "smollm3-tiny", "--cache", 32, "--json").stdout)
    assert any("NoPE layers" in w and "3" in w for w in rep["rewrites"])


def test_refusal_is_reported_with_exit_4():
    r = inspect(FIXTURES / "gpt2-tiny", "--cache", 1024)
    assert r.returncode == 4
    assert "REFUSED" in r.stdout and "n_positions" in r.stdout
    rep = json.loads(inspect(FIXTURES / "gpt2-tiny", "--cache", 1024, "--json").stdout)
    assert rep["supported"] is False and "n_positions" in rep["refused"]


def test_not_a_checkpoint(tmp_path):
    r = inspect(tmp_path)
    assert r.returncode == 3
    assert "config.json" in r.stderr
