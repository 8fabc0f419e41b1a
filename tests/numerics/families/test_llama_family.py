"""What only the Llama family has (the table-driven files judge its exports
like every family's). The committed Llama-family fixtures are self-consistent, without the binary
and without torch: a float64 numpy forward over the checkpoint (conftest's
safetensors reader), driven by config.json and HF's inv_freq from fixture.json,
reproduces the Hugging Face reference logits; and fixture.json's inv_freq is
what config.json's rope settings give. A failure here is a fixture or reader
problem, not an export problem."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import FAMILIES, FIXTURES, fixture_info, load_checkpoint, reference

# The families docs/llama-family.md describes (Llama, Qwen2, Qwen3, SmolLM3).
LLAMA_FAMILY = [x for f in FAMILIES if f.doc == "llama-family.md" for x in f.fixtures]


def config_json(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text())


def use_rope_from_config(cfg: dict) -> list[int]:
    """HF's rule: SmolLM3 `no_rope_layers[i] == 1` means the layer USES RoPE; when
    the list is absent, layer i uses RoPE iff (i + 1) % no_rope_layer_interval != 0."""
    n = cfg["num_hidden_layers"]
    if cfg.get("model_type") != "smollm3":
        return [1] * n
    if cfg.get("no_rope_layers") is not None:
        return [int(x) for x in cfg["no_rope_layers"]]
    k = cfg.get("no_rope_layer_interval", 4)
    return [int((i + 1) % k != 0) for i in range(n)]


def inv_freq_from_config(cfg: dict) -> np.ndarray:
    """Default / llama3 inv_freq in float64 (HF computes in float32)."""
    hd = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters")  # transformers 5 writes rope_parameters
    theta = cfg["rope_theta"] if "rope_theta" in cfg else rs["rope_theta"]
    inv = 1.0 / (theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd))
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        old = rs["original_max_position_embeddings"]
        lo, hi, fac = rs["low_freq_factor"], rs["high_freq_factor"], rs["factor"]
        wl = 2 * math.pi / inv
        out = np.where(wl > old / lo, inv / fac, inv)
        smooth = (old / wl - lo) / (hi - lo)
        smoothed = (1 - smooth) * out / fac + smooth * out
        medium = ~(wl < old / hi) & ~(wl > old / lo)
        inv = np.where(medium, smoothed, out)
    return inv


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate_half(x):
    d = x.shape[-1] // 2
    return np.concatenate([-x[..., d:], x[..., :d]], -1)


def last_logits(sd, cfg, inv_freq, use_rope, tokens):
    sd = {k: v.astype(np.float64) for k, v in sd.items()}
    L = len(tokens)
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or cfg["hidden_size"] // nh
    eps = cfg["rms_norm_eps"]
    ang = np.asarray(inv_freq, np.float32)[None, :] * np.arange(L, dtype=np.float32)[:, None]
    ang = np.concatenate([ang, ang], -1).astype(np.float64)
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]
    causal = np.where(np.tri(L, dtype=bool), 0.0, -np.inf)
    h = sd["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}.self_attn."
        a = rms_norm(h, sd[f"model.layers.{i}.input_layernorm.weight"], eps)

        def proj(name, n):
            y = a @ sd[p + name + ".weight"].T
            if p + name + ".bias" in sd:
                y = y + sd[p + name + ".bias"]
            return y.reshape(L, n, d)
        q, k, v = proj("q_proj", nh), proj("k_proj", nkv), proj("v_proj", nkv)
        if p + "q_norm.weight" in sd:
            q = rms_norm(q, sd[p + "q_norm.weight"], eps)
            k = rms_norm(k, sd[p + "k_norm.weight"], eps)
        if use_rope[i]:
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        q, k, v = (t.transpose(1, 0, 2) for t in (q, k, v))
        k, v = np.repeat(k, nh // nkv, 0), np.repeat(v, nh // nkv, 0)
        s = q @ k.transpose(0, 2, 1) * d ** -0.5 + causal
        s = np.exp(s - s.max(-1, keepdims=True))
        o = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(L, nh * d)
        h = h + o @ sd[p + "o_proj.weight"].T
        m = rms_norm(h, sd[f"model.layers.{i}.post_attention_layernorm.weight"], eps)
        g = m @ sd[f"model.layers.{i}.mlp.gate_proj.weight"].T
        u = m @ sd[f"model.layers.{i}.mlp.up_proj.weight"].T
        h = h + (g / (1 + np.exp(-g)) * u) @ sd[f"model.layers.{i}.mlp.down_proj.weight"].T
    h = rms_norm(h[-1], sd["model.norm.weight"], eps)
    head = sd["lm_head.weight"] if "lm_head.weight" in sd else sd["model.embed_tokens.weight"]
    return h @ head.T


@pytest.mark.parametrize("fixture", LLAMA_FAMILY)
def test_config_and_inv_freq(fixture):
    info = fixture_info(fixture)
    cfg = config_json(fixture)
    assert cfg["architectures"] == [info["architecture"]]
    assert use_rope_from_config(cfg) == info["config"]["use_rope_per_layer"]
    inv = np.asarray(info["rotary_emb_inv_freq"], np.float64)
    hd = info["config"]["head_dim"]
    assert inv.shape == (hd // 2,) and np.all(inv > 0)
    assert np.all(inv.astype(np.float32) == inv), "inv_freq must be float32 values"
    np.testing.assert_allclose(inv, inv_freq_from_config(cfg), rtol=1e-6, atol=0)
    assert cfg["vocab_size"] >= info["tokenizer"]["size"]
    assert cfg["max_position_embeddings"] >= 64
    if fixture == "smollm3-interval":
        assert "no_rope_layers" not in cfg and cfg["no_rope_layer_interval"] == 2
        assert info["config"]["use_rope_per_layer"] == [1, 0, 1, 0]
    if fixture == "smollm3-tiny":
        assert cfg["no_rope_layers"] == [1, 1, 1, 0]
    if fixture == "llama3-tiny":
        kinds = [b["kind"] for b in info["llama3_bands"]]
        assert kinds.count("smoothed") >= 2 and "unchanged" in kinds and "divided" in kinds


@pytest.mark.parametrize("fixture", LLAMA_FAMILY)
def test_references_reproduce_from_checkpoint(fixture):
    info = fixture_info(fixture)
    cfg = config_json(fixture)
    sd = load_checkpoint(FIXTURES / fixture)
    assert ("lm_head.weight" in sd) == (not cfg.get("tie_word_embeddings", True))  # HF default: tied
    assert sd["model.embed_tokens.weight"].shape == (cfg["vocab_size"], cfg["hidden_size"])
    refs = reference(fixture)
    assert sorted(info["reference"]["lengths"]) == sorted(refs)
    for L, (tokens, logits) in refs.items():
        assert tokens.dtype == np.int64 and tokens.shape == (L,)
        assert logits.dtype == np.float32 and logits.shape == (cfg["vocab_size"],)
        got = last_logits(sd, cfg, info["rotary_emb_inv_freq"], info["config"]["use_rope_per_layer"], tokens)
        err = float(np.abs(got - logits).max())
        assert err < 5e-5, f"{fixture} L={L}: numpy forward differs from the reference by {err:.2e}"


@pytest.mark.parametrize("fixture", LLAMA_FAMILY)
def test_generation_config_eos_is_the_fixture_eos(fixture):
    """generation_config.json's eos_token_id (one id or a list) is what fixture.json
    records, so the contract's stop tokens (test_contract.py) are the checkpoint's;
    llama3-tiny has three."""
    gen = json.loads((FIXTURES / fixture / "generation_config.json").read_text())
    eos = gen["eos_token_id"] if isinstance(gen["eos_token_id"], list) else [gen["eos_token_id"]]
    assert eos == fixture_info(fixture)["eos_token_ids"]
    if fixture == "llama3-tiny":
        assert len(eos) == 3
