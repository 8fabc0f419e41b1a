"""What the Phi-3, Phi, StableLM and GPT-NeoX adapters refuse, on edited
copies of the committed fixtures: exit 4 (unsupported) or 3 (bad input), a
message naming the config key and its value, and nothing left behind."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))


def edited(tmp_path, fixture, edit):
    d = tmp_path / "model"
    shutil.copytree(FIXTURES / fixture, d)
    cfg = json.loads((d / "config.json").read_text())
    edit(cfg)
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def export(model, tmp_path, cache=32):
    out = tmp_path / "out"
    p = subprocess.run([str(BIN), "export", str(model), "-o", str(out), "--cache", str(cache), "--prefill", "8"],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr, out


def refused(rc, text, out, code, *needles):
    assert rc == code, f"exit {rc}, expected {code}\n{text}"
    for n in needles:
        assert n in text, f"{n!r} not in:\n{text}"
    assert not out.exists(), "a refused export left its output folder behind"


def test_longrope_cache_beyond_original_max_is_refused(tmp_path):
    """phi3-longrope: original_max_position_embeddings 64, short != long factors (its
    sliding_window 64 lifted, so that the window does not refuse first)."""
    model = edited(tmp_path, "phi3-longrope", lambda c: c.update(sliding_window=None))
    rc, text, out = export(model, tmp_path, cache=128)
    refused(rc, text, out, 4, "rope_parameters", "long_factor", "original_max_position_embeddings 64",
            "largest exact cache is 64")


def test_longrope_equal_factors_allow_any_cache(tmp_path):
    def same(c):
        c["rope_parameters"]["long_factor"] = list(c["rope_parameters"]["short_factor"])
        c["sliding_window"] = None
    rc, text, out = export(edited(tmp_path, "phi3-longrope", same), tmp_path, cache=128)
    assert rc == 0, text
    assert any("and beyond" in r for r in json.loads((out / "manifest.json").read_text())["rewrites"])


def test_sliding_window_below_the_cache_is_refused(tmp_path):
    rc, text, out = export(edited(tmp_path, "phi3-longrope", lambda c: c.update(sliding_window=16)), tmp_path)
    refused(rc, text, out, 4, "sliding_window", "16", "largest exact cache is 16")


def test_yarn_rope_is_refused(tmp_path):
    def yarn(c):
        c["rope_parameters"] = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0,
                                "partial_rotary_factor": 0.25, "original_max_position_embeddings": 32}
    rc, text, out = export(edited(tmp_path, "stablelm-tiny", yarn), tmp_path)
    refused(rc, text, out, 4, "rope_parameters", "yarn")  # the key the file has


def test_odd_rotary_width_is_refused(tmp_path):
    """head_dim 16 x 0.3 = 4.8 -> 4 is fine; x 0.35 = 5.6 -> 5 is odd."""
    def odd(c):
        c["rope_parameters"]["partial_rotary_factor"] = 0.35
    rc, text, out = export(edited(tmp_path, "phi2-tiny", odd), tmp_path)
    refused(rc, text, out, 4, "partial_rotary_factor", "0.35", "5 rotary dimensions")


@pytest.mark.parametrize("fixture,act", [("neox-parallel", "relu"), ("phi2-tiny", "gelu_fast"),
                                         ("stablelm-tiny", "gelu"), ("phi4mini-tiny", "gelu")])
def test_unsupported_activation_is_refused(fixture, act, tmp_path):
    rc, text, out = export(edited(tmp_path, fixture, lambda c: c.update(hidden_act=act)), tmp_path)
    refused(rc, text, out, 4, "hidden_act", act)


def test_neox_with_kv_heads_is_refused(tmp_path):
    rc, text, out = export(edited(tmp_path, "neox-parallel", lambda c: c.update(num_key_value_heads=1)), tmp_path)
    refused(rc, text, out, 4, "num_key_value_heads")


def test_untied_neox_without_embed_out_is_bad_input(tmp_path):
    rc, text, out = export(edited(tmp_path, "neox-sequential", lambda c: c.update(tie_word_embeddings=False)), tmp_path)
    refused(rc, text, out, 3, "tie_word_embeddings", "embed_out.weight")


def test_legacy_rotary_keys_are_read(tmp_path):
    """neox-sequential's config.json has rotary_pct 0.5 and rotary_emb_base 5000 (no rope dict):
    theta must use base 5000 over 8 of 16 dimensions, then zeros."""
    import numpy as np
    rc, text, out = export(FIXTURES / "neox-sequential", tmp_path)
    assert rc == 0, text
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    inv = 1.0 / 5000.0 ** (np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(theta[:4], inv, rtol=1e-6)
    np.testing.assert_allclose(theta[4:8], inv, rtol=1e-6)
    assert np.all(theta[8:] == 0) and theta.shape == (16,)


def test_phi3_without_rope_scaling_uses_default_rope(tmp_path):
    """Phi-3-mini-4k's config has no rope dict of scaling (rope_scaling null): plain
    inv_freq over the whole head, no attention factor Mul in the graph."""
    import numpy as np

    def plain(c):
        c["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0}
    rc, text, out = export(edited(tmp_path, "phi3-longrope", plain), tmp_path)
    assert rc == 0, text
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    inv = 1.0 / 10000.0 ** (np.arange(0, 16, 2) / 16)
    np.testing.assert_allclose(theta, np.concatenate([inv, inv]), rtol=1e-6)
    assert b"rope_factor" not in (out / "model.onnx").read_bytes()


def v4_layout(c):
    """config.json as transformers 4 wrote the released Phi-2 / Phi-3.5 ones: rope_theta and
    partial_rotary_factor at the top level, rope_scaling (with "type") instead of rope_parameters."""
    rope = c.pop("rope_parameters")
    c["rope_theta"] = rope.pop("rope_theta")
    c["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
    rope.pop("original_max_position_embeddings", None)
    kind = rope.pop("rope_type")
    c["rope_scaling"] = None if kind == "default" else {"type": kind, **rope}


@pytest.mark.parametrize("fixture", ["phi2-tiny", "phi4mini-tiny", "stablelm-tiny"])
def test_transformers4_layout_exports_the_same_graph(fixture, tmp_path):
    def v4(c):
        v4_layout(c)
        c["num_key_value_heads"] = c["num_key_value_heads"] if fixture != "phi2-tiny" else None
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    rc, text, out_a = export(FIXTURES / fixture, tmp_path / "a")
    assert rc == 0, text
    rc, text, out_b = export(edited(tmp_path / "b", fixture, v4), tmp_path / "b")
    assert rc == 0, text
    for f in ["model.onnx.data", "resources/theta.npy"]:
        assert (out_a / f).read_bytes() == (out_b / f).read_bytes(), f
