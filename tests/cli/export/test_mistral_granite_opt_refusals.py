"""Refusals of the mistral, granite and opt adapters, and of the Llama-family
reading whichever member is forced (issue 16 item 2): real binary, exit 4
for a model llm2hef will not convert exactly, 3 for a malformed value, and a
message naming the config key and its value (and, where a number decides,
the largest value that works). Fixtures from
tools/fixtures/make_mistral_granite_opt_fixtures.py and make_llama_family_fixtures.py;
variants are copies with one config.json key changed."""
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


def run(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)


def export(folder, out, cache, *extra):
    return run("export", folder, "-o", out, "--cache", cache, "--prefill", 8, "--no-progress", *extra)


def variant(tmp_path: Path, fixture: str, **changes) -> Path:
    """A copy of the fixture with config.json keys set (None writes null; a key
    mapped to ... is removed)."""
    dst = tmp_path / f"{fixture}-variant"
    shutil.copytree(FIXTURES / fixture, dst)
    cfg = json.loads((dst / "config.json").read_text())
    for k, v in changes.items():
        if v is ...:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def refused(proc, *needles, code=4):
    text = proc.stdout + proc.stderr
    assert proc.returncode == code, f"exit {proc.returncode}, expected {code}\n{text}"
    for n in needles:
        assert n in text, (n, text)
    return text


# ---------------------------------------------------------------- sliding windows

@pytest.mark.parametrize("adapter", [None, "mistral", "llama", "granite"])
def test_window_smaller_than_cache_is_refused_whatever_the_adapter(adapter, tmp_path):
    out = tmp_path / "out"
    extra = ["--adapter", adapter] if adapter else []
    proc = export(FIXTURES / "mistral-window", out, 128, *extra)
    refused(proc, "sliding_window", "64", "--cache 64")
    assert not out.exists()


@pytest.mark.parametrize("adapter", [None, "llama"])
def test_window_equal_to_cache_is_exported_and_said(adapter, tmp_path):
    out = tmp_path / "out"
    extra = ["--adapter", adapter] if adapter else []
    proc = export(FIXTURES / "mistral-window", out, 64, *extra)
    assert proc.returncode == 0, proc.stderr
    man = json.loads((out / "manifest.json").read_text())
    assert any("sliding_window 64" in n and "exact" in n for n in man["notes"]), man["notes"]


def test_inspect_shows_the_window_policy():
    proc = run("inspect", FIXTURES / "mistral-window", "--cache", 64)
    assert proc.returncode == 0, proc.stderr
    assert "sliding_window 64" in proc.stdout, proc.stdout
    proc = run("inspect", FIXTURES / "mistral-window", "--cache", 128)
    refused(proc, "sliding_window", "--cache 64")


@pytest.mark.parametrize("changes,cache,ok", [
    # Qwen2's rule: use_sliding_window false disables the window whatever its size.
    (dict(use_sliding_window=False, sliding_window=16, max_window_layers=0, layer_types=...), 32, True),
    # Without layer_types, layers i >= max_window_layers slide: with max_window_layers =
    # num_hidden_layers none does.
    (dict(use_sliding_window=True, sliding_window=16, max_window_layers=2, layer_types=...), 32, True),
    (dict(use_sliding_window=True, sliding_window=16, max_window_layers=1, layer_types=...), 32, False),
    (dict(use_sliding_window=True, sliding_window=32, max_window_layers=0, layer_types=...), 32, True),
    # layer_types wins over max_window_layers.
    (dict(use_sliding_window=True, sliding_window=16, max_window_layers=2,
          layer_types=["full_attention", "sliding_attention"]), 32, False),
])
def test_qwen2_window_semantics(changes, cache, ok, tmp_path):
    src = variant(tmp_path, "qwen2-tiny", **changes)
    out = tmp_path / "out"
    proc = export(src, out, cache)
    if ok:
        assert proc.returncode == 0, proc.stderr
    else:
        text = refused(proc, "sliding_window", "--cache 16")
        assert "layers 1" in text, text


def test_bad_window_is_bad_input(tmp_path):
    src = variant(tmp_path, "mistral-window", sliding_window=0)
    refused(export(src, tmp_path / "out", 32), "sliding_window", code=3)


# ---------------------------------------------------------------- Granite multipliers

@pytest.mark.parametrize("adapter", ["llama", "mistral", "qwen2"])
def test_granite_multipliers_refused_by_other_members(adapter, tmp_path):
    out = tmp_path / "out"
    proc = export(FIXTURES / "granite-tiny", out, 32, "--adapter", adapter)
    refused(proc, "embedding_multiplier", "12", "--adapter granite")
    assert not out.exists()


@pytest.mark.parametrize("key", ["embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                 "logits_scaling"])
def test_granite_non_positive_multiplier_is_bad_input(key, tmp_path):
    src = variant(tmp_path, "granite-tiny", **{key: 0})
    refused(export(src, tmp_path / "out", 32), key, code=3)


# ---------------------------------------------------------------- OPT

def test_opt_cache_beyond_positions_is_refused(tmp_path):
    out = tmp_path / "out"
    refused(export(FIXTURES / "opt-tiny", out, 128),
            "max_position_embeddings': OPT has learned positions only for 0..63",
            "the largest exact cache is 64 (pass --cache 64 or less)")
    assert not out.exists()


def test_opt_other_activation_is_refused(tmp_path):
    src = variant(tmp_path, "opt-tiny", activation_function="gelu")
    refused(export(src, tmp_path / "out", 32), "activation_function", "'gelu'")


def test_opt_missing_project_in_is_bad_input(tmp_path):
    # word_embed_proj_dim says 64 = hidden (no projection), but the table is 32 wide.
    src = variant(tmp_path, "opt-postln", word_embed_proj_dim=64)
    refused(export(src, tmp_path / "out", 32), "embed_tokens.weight", code=3)


# ---------------------------------------------------------------- forced Llama-family members

@pytest.mark.parametrize("fixture,adapter,tensor", [
    ("qwen2-tiny", "llama", "self_attn.q_proj.bias"),
    ("qwen2-tiny", "mistral", "self_attn.q_proj.bias"),
    ("qwen3-tiny", "llama", "self_attn.q_norm.weight"),
    ("qwen3-tiny", "granite", "self_attn.q_norm.weight"),
])
def test_forced_member_refuses_tensors_it_would_drop(fixture, adapter, tensor, tmp_path):
    out = tmp_path / "out"
    refused(export(FIXTURES / fixture, out, 32, "--adapter", adapter), tensor, "--adapter")
    assert not out.exists()


def test_forced_member_refuses_nope_layers(tmp_path):
    out = tmp_path / "out"
    refused(export(FIXTURES / "smollm3-tiny", out, 32, "--adapter", "llama"), "no_rope_layers", "--adapter smollm3")
    assert not out.exists()


def test_smollm3_window_slides_its_nope_layers(tmp_path):
    # HF's SmolLM3 rule without layer_types: the NoPE layers slide (here layer 3 of
    # no_rope_layers [1, 1, 1, 0]), whatever max_window_layers says.
    src = variant(tmp_path, "smollm3-tiny", use_sliding_window=True, sliding_window=16, max_window_layers=28,
                  layer_types=...)
    text = refused(export(src, tmp_path / "out", 32), "sliding_window", "--cache 16")
    assert "layers 3" in text, text
    assert export(src, tmp_path / "out16", 16).returncode == 0
