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
                                             ("smollm3-tiny", "smollm3"), ("qwen3-tiny", "qwen3"),
                                             ("mistral-tiny", "mistral"), ("granite-tiny", "granite"),
                                             ("opt-tiny", "opt"), ("gemma3-tiny", "gemma3"), ("gemma2-tiny", "gemma2"),
                                             ("olmo2-tiny", "olmo2")])
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


def test_lfm2_cache_counts_conv_layers():
    """LFM2 caches K/V only in its attention layers and B*x in its conv layers."""
    rep = json.loads(inspect(FIXTURES / "lfm2-tiny", "--cache", 32, "--json").stdout)
    cfg = json.loads((FIXTURES / "lfm2-tiny" / "fixture.json").read_text())["config"]
    assert rep["adapter"]["name"] == "lfm2" and rep["supported"] is True
    attn, conv = cfg["layer_types"].count("full_attention"), cfg["layer_types"].count("conv")
    per_pos = attn * 2 * cfg["num_attention_heads"] * cfg["head_dim"] + conv * cfg["hidden_size"]
    assert rep["memory"]["kv_cache_bytes"] == per_pos * 32
    assert "conv layers" in rep["memory"]["kv_cache_layout"]
    assert any(n.startswith("conv cost at cache 32") for n in rep["notes"])


@pytest.mark.parametrize("name,ffn,params,conv_layers", [("LFM2-350M", 4608, 354_483_968, 10),
                                                         ("LFM2-2.6B", 10752, 2_569_272_320, 22)])
def test_lfm2_released_shapes(tmp_path, name, ffn, params, conv_layers):
    """Shape-only checkpoints of the released sizes (sparse files): FFN width after
    HF's auto-adjust, parameter count, and the conv cost figures at cache 2048."""
    import sys
    sys.path.insert(0, str(REPO / "tools" / "fixtures"))
    import make_lfm2_shape_checkpoints as shapes
    shapes.write(tmp_path, name)
    r = inspect(tmp_path / name, "--cache", 2048, "--json")
    rep = json.loads(r.stdout)
    # Shape-only: no tokenizer, so export would stop at the resources (exit 3).
    assert r.returncode == (3 if "error" in rep["resources"] else 0), r.stderr
    assert rep["dims"]["intermediate"] == ffn and rep["parameters"] == params
    h = rep["dims"]["hidden"]
    assert f"{conv_layers} conv layers x {h} (B*x)" in rep["memory"]["kv_cache_layout"]
    note = next(n for n in rep["notes"] if n.startswith("conv cost"))
    assert f"[rows, 2048] x [2048, {h}]" in note and "no extra inputs (pe width 64" in note, note
