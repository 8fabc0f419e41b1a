"""Config keys that change the forward pass are applied or refused, never
dropped (issue 16, item 2).

KEYS is written from transformers 5.24's modeling code, not from llm2hef's
table: for every key one of the converted families reads and that changes
what the model computes, a value that changes it and (where one exists) the
value that changes nothing. APPLIED is what each adapter states once, in its
info: the keys it applies (`llm2hef adapters --json`, applied_keys), on its
family's representative fixture (tests/family_table.py). Every other key, set
on that fixture, must be refused with exit 4 naming the key (a checkpoint of
another family forced onto the adapter, or a variant the adapter does not
implement) and the adapters whose info applies it; its neutral value must
still pass.
`inspect` runs the same reading and refusals as `export` (plan only), so it
is what the matrix calls; a few full exports check the same thing end to end.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
sys.path.insert(0, str(REPO / "tests"))
from family_table import BY_ADAPTER, FAMILIES  # noqa: E402

ABSENT = object()  # the key has no neutral value: any presence steers the forward pass


def head_dim(c):
    return c.get("head_dim") or c.get("hidden_size", c.get("n_embd")) // c.get("num_attention_heads", c.get("n_head"))


def layers(c):
    return c.get("num_hidden_layers", c.get("n_layer"))


def hidden(c):
    return c.get("hidden_size", c.get("n_embd"))


# key: (a value that changes the forward pass, the neutral value), each a function of the config.
KEYS = {
    # llama, qwen3, smollm3, granite, gemma, olmo2, gpt_neox
    "attention_bias": (lambda c: True, lambda c: False),
    "mlp_bias": (lambda c: True, lambda c: False),                    # llama, smollm3, granite
    "qk_layernorm": (lambda c: True, lambda c: False),                # phi, stablelm
    "use_qkv_bias": (lambda c: True, lambda c: False),                # stablelm
    "use_parallel_residual": (lambda c: True, lambda c: False),       # stablelm, gpt_neox
    "partial_rotary_factor": (lambda c: 0.5, lambda c: 1.0),          # modeling_rope_utils
    "rotary_pct": (lambda c: 0.5, lambda c: 1.0),                     # gpt_neox (older spelling)
    "attn_logit_softcapping": (lambda c: 30.0, lambda c: None),       # gemma2
    "final_logit_softcapping": (lambda c: 30.0, lambda c: None),      # gemma2, gemma3
    "query_pre_attn_scalar": (lambda c: 64, lambda c: ABSENT),        # gemma2, gemma3
    "hidden_activation": (lambda c: "gelu_pytorch_tanh", lambda c: ABSENT),  # gemma2, gemma3
    "use_bidirectional_attention": (lambda c: True, lambda c: False),  # gemma2, gemma3
    "embedding_multiplier": (lambda c: 2.0, lambda c: 1.0),           # granite
    "attention_multiplier": (lambda c: 0.3, lambda c: 1 / math.sqrt(head_dim(c))),
    "residual_multiplier": (lambda c: 0.5, lambda c: 1.0),
    "logits_scaling": (lambda c: 2.0, lambda c: 1.0),
    "no_rope_layers": (lambda c: [1] * (layers(c) - 1) + [0], lambda c: ABSENT),  # smollm3
    "no_rope_layer_interval": (lambda c: 2, lambda c: ABSENT),
    "sliding_window": (lambda c: 8, lambda c: None),                  # qwen2, qwen3, smollm3, mistral, phi3, gemma
    "use_sliding_window": (lambda c: True, lambda c: False),
    "layer_types": (lambda c: ["sliding_attention"] * layers(c), lambda c: ["full_attention"] * layers(c)),
    "scale_attn_weights": (lambda c: False, lambda c: True),          # gpt2
    "scale_attn_by_inverse_layer_idx": (lambda c: True, lambda c: False),
    "do_layer_norm_before": (lambda c: False, lambda c: True),        # opt
    "_remove_final_layer_norm": (lambda c: True, lambda c: False),
    "enable_bias": (lambda c: False, lambda c: True),
    "layer_norm_elementwise_affine": (lambda c: False, lambda c: True),
    "word_embed_proj_dim": (lambda c: hidden(c) // 2, lambda c: hidden(c)),
    "conv_bias": (lambda c: True, lambda c: False),                   # lfm2
    "conv_L_cache": (lambda c: 3, lambda c: ABSENT),
}



def adapters_report() -> list[dict]:
    """`llm2hef adapters --json`'s adapters, in the search order; [] when the binary cannot say."""
    try:
        r = subprocess.run([str(BIN), "adapters", "--json"], capture_output=True, text=True, timeout=120)
        return json.loads(r.stdout)["adapters"] if r.returncode == 0 else []
    except (OSError, ValueError, KeyError):
        return []


REPORT = adapters_report()
# Per first-party adapter (a family_table row whose adapter was found): its
# family's representative fixture and the keys its info applies.
APPLIED = {a["name"]: (BY_ADAPTER[a["name"]].fixture, set(a.get("applied_keys", [])))
           for f in FAMILIES for a in REPORT if a["name"] == f.adapter}


def hint(key: str) -> str:
    """The end of a refusal of `key`: every adapter found whose info applies it, in the search order."""
    names = [a["name"] for a in REPORT if key in a.get("applied_keys", [])]
    return "; use --adapter " + " or --adapter ".join(names) if names else "; no adapter applies it"


REFUSED = [(a, k) for a, (_, applied) in APPLIED.items() for k in KEYS if k not in applied]


def _has_neutral(key):
    return KEYS[key][1]({"num_hidden_layers": 1, "hidden_size": 8, "num_attention_heads": 1}) is not ABSENT


# A neutral value is the table's business, not the adapter's: each key once,
# on the first adapter (in APPLIED's order, then gpt2 first) that does not apply it.
NEUTRAL = []
for _key in filter(_has_neutral, KEYS):
    for _adapter in ["gpt2", *APPLIED]:
        if _key not in APPLIED[_adapter][1]:
            NEUTRAL.append((_adapter, _key))
            break


def variant(tmp_path: Path, fixture: str, key: str, value_of) -> Path:
    """A copy of the fixture whose config.json has `key` set (top level)."""
    src = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, src)
    config = json.loads((src / "config.json").read_text())
    config[key] = value_of(config)
    (src / "config.json").write_text(json.dumps(config))
    return src


def inspect(model: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN), "inspect", str(model), "--cache", "16", "--prefill", "8", *extra],
                          capture_output=True, text=True, timeout=120)


def test_every_first_party_adapter_has_a_family_row_and_states_its_keys():
    names = {a["name"] for a in REPORT}
    assert names, f"{BIN} adapters --json listed no adapter"
    # ctest passes the first-party adapter targets (llm2hef_adapter_<name>); run by hand, every adapter found.
    targets = filter(None, os.environ.get("LLM2HEF_FIRST_PARTY_ADAPTERS", "").split(","))
    first_party = {t.removeprefix("llm2hef_adapter_") for t in targets} or names
    assert first_party - set(BY_ADAPTER) == set(), "adapters without a row in tests/family_table.py"
    assert set(BY_ADAPTER) - names == set(), "family_table rows whose adapter was not found"
    for name, (_, applied) in APPLIED.items():
        # A key outside KEYS is a typo the SDK would call an llm2hef bug, or a
        # key this spec has not been told about: either way, say it here.
        assert applied <= set(KEYS), f"{name} applies keys the spec lacks: {sorted(applied - set(KEYS))}"


@pytest.mark.parametrize("adapter,key", REFUSED, ids=[f"{a}-{k}" for a, k in REFUSED])
def test_a_key_the_adapter_does_not_apply_is_refused_naming_it(adapter, key, tmp_path):
    fixture, _ = APPLIED[adapter]
    model = variant(tmp_path, fixture, key, KEYS[key][0])
    r = inspect(model, "--adapter", adapter)
    assert r.returncode == 4, f"exit {r.returncode}\n{r.stdout}{r.stderr}"
    assert f"'{key}'" in r.stdout + r.stderr, r.stdout + r.stderr
    # The table's refusal (not a reading's own, as GPT-2's of scale_attn_weights false) ends with the hint.
    refusal = [line for line in (r.stdout + r.stderr).splitlines() if "changes the forward pass" in line]
    assert all(line.rstrip().endswith(hint(key)) for line in refusal), f"expected '{hint(key)}' in\n{refusal}"


@pytest.mark.parametrize("adapter,key", NEUTRAL, ids=[f"{a}-{k}" for a, k in NEUTRAL])
def test_the_neutral_value_of_a_key_still_passes(adapter, key, tmp_path):
    fixture, _ = APPLIED[adapter]
    model = variant(tmp_path, fixture, key, KEYS[key][1])
    r = inspect(model, "--adapter", adapter)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout}{r.stderr}"


# A checkpoint of one family forced onto another adapter: refused, naming a
# key of the checkpoint's family (before, these exported another function).
FORCED = [
    ("gemma2-tiny", "llama", "attn_logit_softcapping"),
    ("gemma2-tiny", "olmo2", "attn_logit_softcapping"),
    ("gemma3-tiny", "qwen2", "attn_logit_softcapping"),
    ("gemma3-tiny", "mistral", "attn_logit_softcapping"),
    ("granite-tiny", "llama", "embedding_multiplier"),
    ("neox-parallel", "stablelm", "attention_bias"),
    ("stablelm-parallel", "phi", "use_qkv_bias|use_parallel_residual"),
    ("mistral-window", "olmo2", "sliding_window"),
]


@pytest.mark.parametrize("fixture,adapter,key", FORCED, ids=[f"{f}-as-{a}" for f, a, _ in FORCED])
def test_a_forced_adapter_refuses_the_other_familys_keys(fixture, adapter, key, tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([str(BIN), "export", str(FIXTURES / fixture), "-o", str(out), "--cache", "16", "--prefill",
                        "8", "--adapter", adapter, "--no-progress"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 4, f"exit {r.returncode}\n{r.stderr}"
    assert any(f"'{k}'" in r.stderr for k in key.split("|")) and "--adapter" in r.stderr, r.stderr
    assert not out.exists()
