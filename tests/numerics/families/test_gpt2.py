"""What only GPT-2 has (the table-driven files judge its exports like every
family's). The committed fixtures are self-consistent, without the binary: a
float64 numpy GPT-2 over the checkpoint (read with conftest's safetensors
reader) reproduces the Hugging Face reference logits, so a failure there is a
fixture or reader problem, not an export problem. And without --cache, export
and inspect take the same default cache."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import BY_ADAPTER, FIXTURES, fixture_info, reference, run_llm2hef

FIXTURE_NAMES = list(BY_ADAPTER["gpt2"].fixtures)


def layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gpt2_last_logits(sd, cfg, tokens):
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    L, H, nh = len(tokens), cfg["n_embd"], cfg["n_head"]
    hd, eps = H // nh, cfg["layer_norm_epsilon"]
    h = sd["wte.weight"][tokens] + sd["wpe.weight"][:L]
    causal = np.where(np.tri(L, dtype=bool), 0.0, -np.inf)
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        a = layer_norm(h, sd[p + "ln_1.weight"], sd[p + "ln_1.bias"], eps)
        qkv = a @ sd[p + "attn.c_attn.weight"] + sd[p + "attn.c_attn.bias"]
        q, k, v = (x.reshape(L, nh, hd).transpose(1, 0, 2) for x in np.split(qkv, 3, axis=-1))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd) + causal
        s = np.exp(s - s.max(-1, keepdims=True))
        o = (s / s.sum(-1, keepdims=True)) @ v
        h = h + o.transpose(1, 0, 2).reshape(L, H) @ sd[p + "attn.c_proj.weight"] + sd[p + "attn.c_proj.bias"]
        m = layer_norm(h, sd[p + "ln_2.weight"], sd[p + "ln_2.bias"], eps)
        f = m @ sd[p + "mlp.c_fc.weight"] + sd[p + "mlp.c_fc.bias"]
        f = 0.5 * f * (1 + np.tanh(math.sqrt(2 / math.pi) * (f + 0.044715 * f ** 3)))
        h = h + f @ sd[p + "mlp.c_proj.weight"] + sd[p + "mlp.c_proj.bias"]
    h = layer_norm(h[-1], sd["ln_f.weight"], sd["ln_f.bias"], eps)
    return h @ sd["wte.weight"].T


@pytest.mark.parametrize("fixture", FIXTURE_NAMES)
def test_references_reproduce_from_checkpoint(fixture, checkpoints):
    cfg = fixture_info(fixture)["config"]
    sd = checkpoints(fixture)
    refs = reference(fixture)
    assert set(fixture_info(fixture)["reference"]["lengths"]) == set(refs)
    for L, (tokens, logits) in refs.items():
        assert tokens.dtype == np.int64 and tokens.shape == (L,)
        assert logits.dtype == np.float32 and logits.shape == (cfg["vocab_size"],)
        got = gpt2_last_logits(sd, cfg, tokens)
        err = float(np.abs(got - logits).max())
        assert err < 2e-5, f"{fixture} L={L}: numpy forward differs from the reference by {err:.2e}"


def test_fixture_checkpoints_readable(checkpoints):
    """The conftest safetensors reader sees what the fixtures promise."""
    for name in FIXTURE_NAMES:
        cfg = fixture_info(name)["config"]
        sd = checkpoints(name)
        assert sd["wte.weight"].shape == (cfg["vocab_size"], cfg["n_embd"])
        assert sd["wpe.weight"].shape == (cfg["n_positions"], cfg["n_embd"])
        assert sd["h.0.attn.c_attn.weight"].shape == (cfg["n_embd"], 3 * cfg["n_embd"])
        assert f"h.{cfg['n_layer'] - 1}.mlp.c_proj.weight" in sd and "lm_head.weight" not in sd
        cfg_json = json.loads((FIXTURES / name / "config.json").read_text())
        assert cfg_json["vocab_size"] == cfg["vocab_size"]


def test_without_cache_export_and_inspect_take_the_same_default(tmp_path):
    """No --cache: the model's own limit (n_positions) capped at 2048, for
    export and inspect alike (issue 16: inspect used to default to 2048 and
    fail on GPT-2); no --prefill: 96, or the cache when smaller."""
    n_positions = json.loads((FIXTURES / "gpt2-tiny" / "config.json").read_text())["n_positions"]
    out = tmp_path / "out"
    run_llm2hef(["export", FIXTURES / "gpt2-tiny", "-o", out])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["cache_size"] == min(n_positions, 2048)
    assert manifest["prefill"] == min(96, manifest["cache_size"])
    proc = run_llm2hef(["inspect", FIXTURES / "gpt2-tiny", "--json"])
    report = json.loads(proc.stdout)
    assert (report["cache_size"], report["prefill"]) == (manifest["cache_size"], manifest["prefill"])
