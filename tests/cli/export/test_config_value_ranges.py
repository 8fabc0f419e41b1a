"""Config values a reading turns into graph constants, and the shapes of the
keys that steer the forward pass (issue 30, items 2-5), on edited copies of
the committed fixtures run through the real binary: a value the formula
cannot use is refused naming the file and the key before anything is
written (exit 3, bad input; 4 where llm2hef lacks the feature), and a value
that is not the neutral one is applied or refused, never read as neutral."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures"
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
sys.path.insert(0, str(REPO / "tests"))
from family_table import FAMILIES  # noqa: E402

BAD_INPUT, UNSUPPORTED = 3, 4


def edited(tmp_path, fixture, edit):
    d = tmp_path / "model"
    shutil.copytree(FIXTURES / fixture, d)
    cfg = json.loads((d / "config.json").read_text())
    edit(cfg)
    # json.dumps writes 1e-320 as 1e-320 and 1e308 as 1e+308: both parse back to those doubles.
    (d / "config.json").write_text(json.dumps(cfg))
    return d


def export(model, tmp_path, *extra):
    out = tmp_path / "out"
    p = subprocess.run([str(BIN), "export", str(model), "-o", str(out), "--cache", "32", "--prefill", "8", *extra],
                       capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout + p.stderr, out


def refused(tmp_path, fixture, edit, code, *needles):
    rc, text, out = export(edited(tmp_path, fixture, edit), tmp_path)
    assert rc == code, f"exit {rc}, expected {code}\n{text}"
    assert "config.json" in text, text
    for n in needles:
        assert n in text, f"{n!r} not in:\n{text}"
    assert not out.exists(), "a refused export left its output folder behind"
    return text


def setter(**values):
    return lambda c: c.update(values)


def in_rope_dict(**values):
    def edit(c):
        c.pop("rope_theta", None)
        c.setdefault("rope_parameters", {"rope_type": "default"})
        c["rope_parameters"].update(values)
    return edit


# --- item 2: extreme values of applied keys ---------------------------------

@pytest.mark.parametrize("fixture,key,value", [
    ("gemma2-tiny", "attn_logit_softcapping", 1e308),
    ("gemma2-tiny", "final_logit_softcapping", 1e308),
    ("gemma3-tiny", "final_logit_softcapping", 1e-320),
    ("gemma2-tiny", "query_pre_attn_scalar", 1e308),
    ("gemma2-tiny", "query_pre_attn_scalar", 1e-320),
    ("gemma3-tiny", "query_pre_attn_scalar", 1e-320),
    ("granite-tiny", "embedding_multiplier", 1e308),
    ("granite-tiny", "attention_multiplier", 1e-320),
    ("granite-tiny", "residual_multiplier", 1e308),
    ("granite-tiny", "logits_scaling", 1e-320),
])
def test_scale_out_of_range_is_refused(tmp_path, fixture, key, value):
    refused(tmp_path, fixture, setter(**{key: value}), BAD_INPUT, f"'{key}'", "a scale factor")


# Every family's reading of a norm epsilon: the key its representative
# fixture spells it with (OPT's has none: its LayerNorms use PyTorch's 1e-5).
NORM_EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps")


def _norm_eps_cases():
    cases = []
    for f in FAMILIES:
        config = json.loads((FIXTURES / f.fixture / "config.json").read_text())
        cases += [pytest.param(f.fixture, k, id=f"{f.fixture}-{k}") for k in NORM_EPS_KEYS if k in config]
    return cases


@pytest.mark.parametrize("fixture,key", _norm_eps_cases())
def test_negative_norm_epsilon_is_refused(tmp_path, fixture, key):
    refused(tmp_path, fixture, setter(**{key: -1e-5}), BAD_INPUT, f"'{key}'", "a norm epsilon", "-1e-05")


def test_huge_norm_epsilon_is_refused(tmp_path):
    refused(tmp_path, "qwen2-tiny", setter(rms_norm_eps=1e308), BAD_INPUT, "'rms_norm_eps'", "out of range")


@pytest.mark.parametrize("theta", [0, -10000.0, 1e-320])
def test_longrope_base_must_be_positive(tmp_path, theta):
    """adapters/families/src/longrope.cpp used the base unchecked (the Llama reading checked it)."""
    refused(tmp_path, "phi3-longrope", lambda c: c["rope_parameters"].update(rope_theta=theta), BAD_INPUT,
            "'rope_parameters' 'rope_theta'", "the RoPE base")


def test_longrope_attention_factor_must_be_a_scale(tmp_path):
    refused(tmp_path, "phi3-longrope", lambda c: c["rope_parameters"].update(attention_factor=-2.0), BAD_INPUT,
            "'attention_factor'")


# --- item 3: rope_parameters.rope_theta 0 is a value --------------------------

@pytest.mark.parametrize("fixture", ["mistral-tiny", "olmo2-tiny", "granite-tiny", "gemma2-tiny", "qwen2-tf5"])
def test_zero_rope_theta_in_rope_parameters_is_refused(tmp_path, fixture):
    refused(tmp_path, fixture, in_rope_dict(rope_theta=0), BAD_INPUT, "'rope_parameters' 'rope_theta'",
            "the RoPE base")


def test_rope_parameters_base_wins_over_the_top_level_one(tmp_path):
    """transformers 5: rope_parameters.setdefault("rope_theta", config's rope_theta)."""
    def edit(c):
        c["rope_theta"] = 10.0
        c["rope_parameters"]["rope_theta"] = 1000000.0
    rc, text, out = export(edited(tmp_path, "mistral-tiny", edit), tmp_path)
    assert rc == 0, text
    rewrites = json.loads((out / "manifest.json").read_text())["rewrites"]
    assert any("RoPE theta 1e+06" in r for r in rewrites), rewrites


# --- item 4: Phi-3's rope_type with long/short factors ------------------------

def test_phi3_linear_rope_type_with_factors_is_refused(tmp_path):
    """Phi3Config.validate_rope accepts default and longrope only (su, yarn renamed)."""
    refused(tmp_path, "phi3-longrope", lambda c: c["rope_parameters"].update(rope_type="linear", factor=2.0),
            BAD_INPUT, "rope_type 'linear'", "default and longrope")


def test_phi3_yarn_is_longrope_and_its_factor_is_checked(tmp_path):
    refused(tmp_path, "phi3-longrope", lambda c: c["rope_parameters"].update(rope_type="yarn", factor=-1),
            BAD_INPUT, "'factor'", "a RoPE scaling factor")


def test_phi3_default_rope_type_says_the_factors_are_not_read(tmp_path):
    rc, text, out = export(edited(tmp_path, "phi3-longrope",
                                  lambda c: c["rope_parameters"].update(rope_type="default")), tmp_path)
    assert rc == 0, text
    rewrites = json.loads((out / "manifest.json").read_text())["rewrites"]
    assert not any("longrope" in r for r in rewrites), rewrites
    assert any("short_factor and long_factor not read" in r for r in rewrites), rewrites


# --- item 5: forward keys neutral only at their neutral value ----------------

@pytest.mark.parametrize("layer_types,code,needle", [
    (["full_attention", "chunked_attention"], UNSUPPORTED, "layer 1 is 'chunked_attention'"),
    (["full_attention"] * 3, BAD_INPUT, "a list of 3"),
    (["full_attention"] * 100000, BAD_INPUT, "a list of 100000"),
    ("full_attention", BAD_INPUT, "got string"),
    ([None, None], BAD_INPUT, "entry 0 is null"),
])
def test_llama_layer_types_are_checked_without_a_window(tmp_path, layer_types, code, needle):
    refused(tmp_path, "llama3-tiny", setter(layer_types=layer_types), code, "'layer_types'", needle)


@pytest.mark.parametrize("key", ["do_layer_norm_before", "enable_bias", "layer_norm_elementwise_affine"])
def test_opt_null_switch_is_refused(tmp_path, key):
    """modeling_opt tests these for truth: null would be false there, not the default."""
    refused(tmp_path, "opt-tiny", setter(**{key: None}), BAD_INPUT, f"'{key}'", "not true or false")


@pytest.mark.parametrize("key", ["embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                 "logits_scaling"])
def test_granite_null_multiplier_is_refused(tmp_path, key):
    refused(tmp_path, "granite-tiny", setter(**{key: None}), BAD_INPUT, f"'{key}'", "null is not a multiplier")


@pytest.mark.parametrize("fixture", ["gemma2-tiny", "gemma3-tiny"])
def test_gemma_null_query_pre_attn_scalar_is_refused(tmp_path, fixture):
    refused(tmp_path, fixture, setter(query_pre_attn_scalar=None), BAD_INPUT, "'query_pre_attn_scalar'",
            "null is not a score scale")


@pytest.mark.parametrize("fixture,key", [("llama3-tf5", "rope_parameters"), ("llama3-tiny", "rope_scaling"),
                                         ("phi3-longrope", "rope_parameters"), ("gemma3-tiny", "rope_parameters"),
                                         ("gemma2-tiny", "rope_parameters")])
def test_rope_dict_that_is_a_list_is_refused(tmp_path, fixture, key):
    refused(tmp_path, fixture, setter(**{key: [{"rope_type": "linear", "factor": 4.0}]}), BAD_INPUT, f"'{key}'",
            "expected an object")


def test_neutral_values_still_pass(tmp_path):
    def edit(c):
        c["layer_types"] = ["full_attention", "full_attention"]
        c["rms_norm_eps"] = 0
    rc, text, _ = export(edited(tmp_path, "llama3-tiny", edit), tmp_path)
    assert rc == 0, text


def test_gemma2_null_softcaps_mean_no_cap(tmp_path):
    """modeling_gemma2: `if config.final_logit_softcapping is not None:`; null is no cap,
    not Gemma2Config's default 30 / 50 (what a null read as 'absent' exported)."""
    rc, text, out = export(edited(tmp_path, "gemma2-tiny", setter(final_logit_softcapping=None,
                                                                   attn_logit_softcapping=None)), tmp_path)
    assert rc == 0, text
    rewrites = json.loads((out / "manifest.json").read_text())["rewrites"]
    assert not any("soft-capped" in r for r in rewrites), rewrites
