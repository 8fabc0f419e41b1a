"""The committed fixtures are self-consistent, without the binary: a float64
numpy GPT-2 over the checkpoint (read with conftest's safetensors reader)
reproduces the Hugging Face reference logits. A failure here is a fixture or
reader problem, not an export problem."""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import FIXTURE_NAMES, fixture_info, reference


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
