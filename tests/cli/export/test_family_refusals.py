"""What each family's adapter refuses, as one table over the families of
tests/family_table.py (llama.cpp's table-driven test-llama-archs in spirit):
the real binary, exit 4 (unsupported) for a model llm2hef will not convert
exactly, 3 (bad input) for a malformed value, 2 for an option the adapter does
not have; a message naming the config key and its value (and, where a number
decides, the largest value that works); and no output folder left behind.

Each row copies a committed fixture (tools/fixtures/) and changes keys of its
config.json, or passes a cache or an option the fixture cannot take. The
unchanged copy of every fixture here exports, so a refusal is the change's.
Then the edits that must still export (the other side of each rule), and the
checks of one family's config reading that need a full export.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))
from family_table import BY_FIXTURE  # noqa: E402

BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
TIMEOUT_S = 300
REMOVE = object()  # a config.json key to delete


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S)


def export(model: Path, out: Path, cache: int, *extra) -> subprocess.CompletedProcess:
    return run("export", model, "-o", out, "--cache", cache, "--prefill", 8, "--no-progress", *extra)


def n_positions(fixture: str) -> int:
    return json.loads((FIXTURES / fixture / "config.json").read_text())["n_positions"]


# --------------------------------------------------------------------------- config edits
Edit = Callable[[dict], None]


def keys(**changes) -> Edit:
    """Set config.json keys (None writes null; REMOVE deletes the key)."""
    def change(cfg):
        for k, v in changes.items():
            if v is REMOVE:
                cfg.pop(k, None)
            else:
                cfg[k] = v
    return change


def item(key, index, value) -> Edit:
    def change(cfg):
        cfg[key][index] = value
    return change


def rope_type(layer_type, value) -> Edit:
    def change(cfg):
        cfg["rope_parameters"][layer_type]["rope_type"] = value
    return change


def rope_parameters(**changes) -> Edit:
    def change(cfg):
        cfg["rope_parameters"].update(changes)
    return change


def longrope_equal_factors(cfg):
    cfg["rope_parameters"]["long_factor"] = list(cfg["rope_parameters"]["short_factor"])
    cfg["sliding_window"] = None


def v4_layout(cfg):
    """config.json as transformers 4 wrote the released Phi-2 / Phi-3.5 ones: rope_theta and
    partial_rotary_factor at the top level, rope_scaling (with "type") instead of rope_parameters."""
    rope = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
    rope.pop("original_max_position_embeddings", None)
    kind = rope.pop("rope_type")
    cfg["rope_scaling"] = None if kind == "default" else {"type": kind, **rope}


def copy(tmp_path: Path, fixture: str, edit: Edit | None) -> Path:
    """The fixture itself, or a copy with `edit` applied to its config.json."""
    if edit is None:
        return FIXTURES / fixture
    dst = tmp_path / f"{fixture}-variant"
    shutil.copytree(FIXTURES / fixture, dst)
    cfg = json.loads((dst / "config.json").read_text())
    edit(cfg)
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


# --------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Refusal:
    fixture: str
    what: str  # names the row in the test id: family-fixture-what
    edit: Edit | None = None
    needles: tuple[str, ...] = ()  # what the message must say
    cache: int = 32
    args: tuple[str, ...] = ()
    code: int = 4

    @property
    def id(self) -> str:
        return f"{BY_FIXTURE[self.fixture].adapter}-{self.fixture}-{self.what}"


GPT2 = [Refusal(f, "cache-above-n_positions", None, ("n_positions",), cache=n_positions(f) + 1)
        for f in BY_FIXTURE["gpt2-tiny"].fixtures] + [
    Refusal("gpt2-tiny", "cache-names-largest", None,
            ("n_positions': GPT-2 has learned positions only for 0..63",
             "--cache 128 is too large, the largest exact cache is 64 (pass --cache 64 or less)"), cache=128),
]

LFM2 = [
    Refusal("lfm2-tiny", "ffn-width-disagrees-with-w1", keys(block_ff_dim=1200),
            ("config.json", "block_ff_dim", "feed_forward.w1.weight"), code=3),
    Refusal("lfm2-tiny", "unknown-layer-type", item("layer_types", 1, "mamba"), ("layer_types", "mamba"), code=3),
    # Refused before the (then missing) conv tensors of layer 2 are looked up.
    Refusal("lfm2-tiny", "no-attention-layer", keys(layer_types=["conv"] * 4), ("layer_types", "no attention layer")),
]

PHI = [
    # phi3-longrope: original_max_position_embeddings 64, short != long factors (its
    # sliding_window 64 lifted, so that the window does not refuse first).
    Refusal("phi3-longrope", "longrope-beyond-original-max", keys(sliding_window=None),
            ("rope_parameters", "long_factor", "original_max_position_embeddings 64", "largest exact cache is 64"),
            cache=128),
    Refusal("phi3-longrope", "window-below-cache", keys(sliding_window=16),
            ("sliding_window", "16", "largest exact cache is 16")),
    Refusal("stablelm-tiny", "yarn", keys(rope_parameters={
        "rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
        "original_max_position_embeddings": 32}), ("rope_parameters", "yarn")),  # the key the file has
    # head_dim 16 x 0.3 = 4.8 -> 4 is fine; x 0.35 = 5.6 -> 5 is odd.
    Refusal("phi2-tiny", "odd-rotary-width", rope_parameters(partial_rotary_factor=0.35),
            ("partial_rotary_factor", "0.35", "5 rotary dimensions")),
    *[Refusal(f, f"hidden_act-{act}", keys(hidden_act=act), ("hidden_act", act))
      for f, act in [("neox-parallel", "relu"), ("phi2-tiny", "gelu_fast"), ("stablelm-tiny", "gelu"),
                     ("phi4mini-tiny", "gelu")]],
    Refusal("neox-parallel", "kv-heads", keys(num_key_value_heads=1), ("num_key_value_heads",)),
    Refusal("neox-sequential", "untied-without-embed_out", keys(tie_word_embeddings=False),
            ("tie_word_embeddings", "embed_out.weight"), code=3),
]

MISTRAL_GRANITE_OPT = [
    *[Refusal("mistral-window", f"window-below-cache-adapter-{a or 'auto'}", None,
              ("sliding_window", "64", "--cache 64"), cache=128, args=("--adapter", a) if a else ())
      for a in [None, "mistral", "llama", "granite"]],
    Refusal("mistral-window", "window-zero", keys(sliding_window=0), ("sliding_window",), code=3),
    # Qwen2's rule: without layer_types, layers i >= max_window_layers slide.
    Refusal("qwen2-tiny", "window-max_window_layers-1",
            keys(use_sliding_window=True, sliding_window=16, max_window_layers=1, layer_types=REMOVE),
            ("sliding_window", "--cache 16", "layers 1")),
    # layer_types wins over max_window_layers.
    Refusal("qwen2-tiny", "window-layer_types",
            keys(use_sliding_window=True, sliding_window=16, max_window_layers=2,
                 layer_types=["full_attention", "sliding_attention"]),
            ("sliding_window", "--cache 16", "layers 1")),
    # HF's SmolLM3 rule without layer_types: the NoPE layers slide (here layer 3 of
    # no_rope_layers [1, 1, 1, 0]), whatever max_window_layers says.
    Refusal("smollm3-tiny", "window-slides-nope-layers",
            keys(use_sliding_window=True, sliding_window=16, max_window_layers=28, layer_types=REMOVE),
            ("sliding_window", "--cache 16", "layers 3")),
    *[Refusal("granite-tiny", f"multipliers-forced-{a}", None, ("embedding_multiplier", "12", "--adapter granite"),
              args=("--adapter", a)) for a in ["llama", "mistral", "qwen2"]],
    *[Refusal("granite-tiny", f"{k}-zero", keys(**{k: 0}), (k,), code=3)
      for k in ["embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"]],
    Refusal("opt-tiny", "cache-beyond-positions", None,
            ("max_position_embeddings': OPT has learned positions only for 0..63",
             "the largest exact cache is 64 (pass --cache 64 or less)"), cache=128),
    Refusal("opt-tiny", "activation-gelu", keys(activation_function="gelu"), ("activation_function", "'gelu'")),
    # word_embed_proj_dim says 64 = hidden (no projection), but the table is 32 wide.
    Refusal("opt-postln", "missing-project_in", keys(word_embed_proj_dim=64), ("embed_tokens.weight",), code=3),
    # A Llama-family member forced onto a checkpoint with tensors it would drop.
    *[Refusal(f, f"forced-{a}", None, (tensor, "--adapter"), args=("--adapter", a))
      for f, a, tensor in [("qwen2-tiny", "llama", "self_attn.q_proj.bias"),
                           ("qwen2-tiny", "mistral", "self_attn.q_proj.bias"),
                           ("qwen3-tiny", "llama", "self_attn.q_norm.weight"),
                           ("qwen3-tiny", "granite", "self_attn.q_norm.weight")]],
    Refusal("smollm3-tiny", "forced-llama-nope-layers", None, ("no_rope_layers", "--adapter smollm3"),
            args=("--adapter", "llama")),
]

POST_NORM = [
    Refusal("gemma3-tiny", "hidden_activation", keys(hidden_activation="gelu"), ("hidden_activation", "'gelu'")),
    Refusal("gemma3-tiny", "use_bidirectional_attention", keys(use_bidirectional_attention=True),
            ("use_bidirectional_attention", "true")),
    Refusal("gemma3-tiny", "attention_bias", keys(attention_bias=True), ("attention_bias", "true")),
    Refusal("gemma3-tiny", "layer_types", item("layer_types", 1, "chunked_attention"),
            ("layer_types", "'chunked_attention'")),
    Refusal("gemma3-tiny", "rope_type", rope_type("full_attention", "yarn"), ("rope_type", "'yarn'", "full_attention")),
    Refusal("gemma3-tiny", "sliding_window", keys(sliding_window=16),
            ("sliding_window", "16", "--cache 32", "largest exact cache is 16")),
    Refusal("gemma2-tiny", "hidden_activation", keys(hidden_activation="gelu_new"),
            ("hidden_activation", "'gelu_new'")),
    Refusal("gemma2-tiny", "sliding_window", keys(sliding_window=31),
            ("sliding_window", "31", "largest exact cache is 31")),
    Refusal("olmo2-tiny", "hidden_act", keys(hidden_act="relu"), ("hidden_act", "'relu'")),
    Refusal("olmo2-tiny", "attention_bias", keys(attention_bias=True), ("attention_bias", "true")),
    Refusal("olmo2-tiny", "rope_type",
            keys(rope_parameters={"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0}),
            ("rope_type", "'yarn'")),
    # gemma3-window slides over 32 positions.
    Refusal("gemma3-window", "cache-above-window", None,
            ("sliding_window", "32", "--cache 64", "largest exact cache is 32"), cache=64),
    Refusal("gemma3-window", "sliding-window-refuse", None, ("largest exact cache is 32", "--sliding-window band"),
            cache=64, args=("--sliding-window", "refuse")),
    # --sliding-window is an option of the Gemma adapters: olmo2 (no sliding layers) rejects it.
    Refusal("olmo2-tiny", "sliding-window-option", None, ("--sliding-window",), args=("--sliding-window", "band"),
            code=2),
]

REFUSALS = GPT2 + LFM2 + PHI + MISTRAL_GRANITE_OPT + POST_NORM


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in REFUSALS])
def test_refused_naming_key_and_value(case, tmp_path):
    out = tmp_path / "out"
    proc = export(copy(tmp_path, case.fixture, case.edit), out, case.cache, *case.args)
    text = proc.stdout + proc.stderr
    assert proc.returncode == case.code, f"exit {proc.returncode}, expected {case.code}\n{text}"
    for n in case.needles:
        assert n in text, f"{n!r} not in the message:\n{text}"
    assert not out.exists(), "a refused export left its output folder behind"


@pytest.mark.parametrize("fixture", sorted({c.fixture for c in REFUSALS}))
def test_unchanged_copy_exports(fixture, tmp_path):
    """Every fixture the table edits exports as it is, at cache 32 with no option."""
    proc = export(copy(tmp_path, fixture, keys()), tmp_path / "out", 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_row_is_one_of_its_familys_fixtures():
    for c in REFUSALS:
        assert c.fixture in BY_FIXTURE[c.fixture].fixtures, c.id
    assert len({c.id for c in REFUSALS}) == len(REFUSALS), "two rows share an id"


# --------------------------------------------------------------------------- edits that still export
@dataclass(frozen=True)
class Accepted:
    fixture: str
    what: str
    edit: Edit | None = None
    cache: int = 32
    args: tuple[str, ...] = ()
    said: str | None = None  # a manifest rewrite or note that must say this

    @property
    def id(self) -> str:
        return f"{BY_FIXTURE[self.fixture].adapter}-{self.fixture}-{self.what}"


ACCEPTED = [
    Accepted("phi3-longrope", "longrope-equal-factors-any-cache", longrope_equal_factors, 128, said="and beyond"),
    *[Accepted("mistral-window", f"window-equal-to-cache-adapter-{a or 'auto'}", None, 64,
               ("--adapter", a) if a else (), said="sliding_window 64") for a in [None, "llama"]],
    # Qwen2's rule: use_sliding_window false disables the window whatever its size.
    Accepted("qwen2-tiny", "window-disabled",
             keys(use_sliding_window=False, sliding_window=16, max_window_layers=0, layer_types=REMOVE)),
    # With max_window_layers = num_hidden_layers no layer slides.
    Accepted("qwen2-tiny", "window-max_window_layers-2",
             keys(use_sliding_window=True, sliding_window=16, max_window_layers=2, layer_types=REMOVE)),
    Accepted("qwen2-tiny", "window-equal-to-cache",
             keys(use_sliding_window=True, sliding_window=32, max_window_layers=0, layer_types=REMOVE)),
    Accepted("smollm3-tiny", "window-equal-to-cache",
             keys(use_sliding_window=True, sliding_window=16, max_window_layers=28, layer_types=REMOVE), 16),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ACCEPTED])
def test_edit_still_exports(case, tmp_path):
    out = tmp_path / "out"
    proc = export(copy(tmp_path, case.fixture, case.edit), out, case.cache, *case.args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if case.said:
        man = json.loads((out / "manifest.json").read_text())
        assert any(case.said in n for n in man["rewrites"] + man["notes"]), (man["rewrites"], man["notes"])


# --------------------------------------------------------------------------- inspect says the same
def test_inspect_shows_the_mistral_window_policy():
    proc = run("inspect", FIXTURES / "mistral-window", "--cache", 64)
    assert proc.returncode == 0, proc.stderr
    assert "sliding_window 64" in proc.stdout, proc.stdout
    proc = run("inspect", FIXTURES / "mistral-window", "--cache", 128)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "sliding_window" in proc.stdout + proc.stderr and "--cache 64" in proc.stdout + proc.stderr


def test_inspect_shows_the_gemma3_window_policy():
    """gemma3-window: --cache 32 is exact, 64 refused naming the largest exact cache."""
    proc = run("inspect", FIXTURES / "gemma3-window", "--cache", 64)
    assert proc.returncode == 4 and "largest exact cache is 32" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    ok = run("inspect", FIXTURES / "gemma3-window", "--cache", 32)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "every layer is global and exact" in ok.stdout, ok.stdout


# --------------------------------------------------------------------------- one family's config reading
def test_gpt_neox_legacy_rotary_keys_are_read(tmp_path):
    """neox-sequential's config.json has rotary_pct 0.5 and rotary_emb_base 5000 (no rope dict):
    theta must use base 5000 over 8 of 16 dimensions, then zeros."""
    out = tmp_path / "out"
    proc = export(FIXTURES / "neox-sequential", out, 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    inv = 1.0 / 5000.0 ** (np.arange(0, 8, 2) / 8)
    np.testing.assert_allclose(theta[:4], inv, rtol=1e-6)
    np.testing.assert_allclose(theta[4:8], inv, rtol=1e-6)
    assert np.all(theta[8:] == 0) and theta.shape == (16,)


def test_phi3_without_rope_scaling_uses_default_rope(tmp_path):
    """Phi-3-mini-4k's config has no rope dict of scaling (rope_scaling null): plain
    inv_freq over the whole head, no attention factor Mul in the graph."""
    plain = keys(rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0})
    out = tmp_path / "out"
    proc = export(copy(tmp_path, "phi3-longrope", plain), out, 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    theta = np.load(out / "resources" / "theta.npy").astype(np.float64)
    inv = 1.0 / 10000.0 ** (np.arange(0, 16, 2) / 16)
    np.testing.assert_allclose(theta, np.concatenate([inv, inv]), rtol=1e-6)
    assert b"rope_factor" not in (out / "model.onnx").read_bytes()


@pytest.mark.parametrize("fixture", ["phi2-tiny", "phi4mini-tiny", "stablelm-tiny"])
def test_transformers4_layout_exports_the_same_graph(fixture, tmp_path):
    def v4(cfg):
        v4_layout(cfg)
        cfg["num_key_value_heads"] = cfg["num_key_value_heads"] if fixture != "phi2-tiny" else None
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    out_a, out_b = tmp_path / "a" / "out", tmp_path / "b" / "out"
    proc = export(FIXTURES / fixture, out_a, 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = export(copy(tmp_path / "b", fixture, v4), out_b, 32)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for f in ["model.onnx.data", "resources/theta.npy"]:
        assert (out_a / f).read_bytes() == (out_b / f).read_bytes(), f
