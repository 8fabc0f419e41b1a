"""`llm2hef inspect` on the committed fixtures: adapter, sizes, memory, refusals."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
sys.path.insert(0, str(REPO / "tests"))
from family_table import FAMILIES  # noqa: E402


def inspect(*args):
    r = subprocess.run([str(BIN), "inspect", *map(str, args)], capture_output=True, text=True, timeout=120)
    return r


@pytest.mark.parametrize("fixture,adapter", [(f.fixture, f.adapter) for f in FAMILIES])
def test_reports_adapter_dims_and_memory(fixture, adapter):
    r = inspect(FIXTURES / fixture, "--cache", 32, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    cfg = json.loads((FIXTURES / fixture / "config.json").read_text())
    assert rep["adapter"]["name"] == adapter
    assert rep["supported"] is True
    assert rep["dims"]["vocab"] == cfg["vocab_size"]
    d, mem = rep["dims"], rep["memory"]
    if mem["kv_cache_layout"] == "K and V in every layer":
        assert mem["kv_cache_bytes"] == 2 * d["layers"] * d["heads"] * d["head_dim"] * 32
    else:  # the adapter's own cache cost (LFM2's conv layers cache B*x): stated, and a whole number per position
        assert mem["kv_cache_bytes"] > 0 and mem["kv_cache_bytes"] % 32 == 0, mem
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


# ---------------------------------------------------------------- decode speed (issue 36, item 3)

def plan_with_extra_weights(path, extra_weight_bytes, default_mode="a8_w4"):
    """A quantization.json as calibrate writes it, reduced to what inspect reads."""
    path.write_text(json.dumps({
        "version": 1, "plan": {"default_mode": default_mode, "lines": []},
        "budget": {"extra_weight_bytes": extra_weight_bytes, "extra_activation_bytes": 0,
                   "weight_bytes_default": 1000}}))
    return path


def test_decode_speed_rows():
    """Every plan says what it costs: tokens/s from the bytes a generated token
    reads, for llm2hef's default, Hailo's recipe and all weights at 8 bits."""
    r = inspect(FIXTURES / "llama3-tiny", "--cache", 32, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    speed, mem = rep["decode_speed"], rep["memory"]
    rows = speed["rows"]
    assert set(rows) == {"default", "hailo_recipe", "all_8bit"}
    for row in rows.values():
        assert 0 < row["tokens_per_s_low"] < row["tokens_per_s_high"]
    # The default reads what the memory model holds on the chip: every weight
    # at 4 bits and the whole cache (the embedding table stays on the host).
    assert abs(rows["default"]["bytes_per_token"] - (mem["weights_a8w4_bytes"] + mem["kv_cache_bytes"])) <= 1
    assert rows["all_8bit"]["tokens_per_s_high"] < rows["default"]["tokens_per_s_high"]
    # Every weight twice as wide: the weights' bytes double, the cache's do not.
    assert abs(rows["all_8bit"]["bytes_per_token"] - (2 * mem["weights_a8w4_bytes"] + mem["kv_cache_bytes"])) <= 1
    # Hailo's recipe has 4-bit weights everywhere too (its 16-bit layers hold none).
    assert rows["hailo_recipe"]["bytes_per_token"] == rows["default"]["bytes_per_token"]
    low, high = speed["bandwidth_bytes_per_s"]["low"], speed["bandwidth_bytes_per_s"]["high"]
    assert rows["default"]["tokens_per_s_high"] == pytest.approx(high / rows["default"]["bytes_per_token"], rel=1e-5)
    assert low / high == pytest.approx(6.9 / 9.45)
    assert "Qwen2-1.5B-Instruct" in speed["anchor"] and "upper bound" in speed["assumptions"]

    text = inspect(FIXTURES / "llama3-tiny", "--cache", 32).stdout
    assert "decode speed  upper bounds from memory bandwidth alone" in text, text
    for label in ("  default  ", "  Hailo recipe  ", "  all 8-bit  "):
        line = next(x for x in text.splitlines() if x.startswith(label))
        assert "tokens/s" in line and "read per token" in line, line
    assert "with plan" not in text


def test_decode_speed_with_a_plan(tmp_path):
    """--plan: the plan's extra weight bytes add to the default's reads, and
    lower its tokens/s in proportion; a plan at 8 bits by default costs what
    all_8bit costs."""
    base = json.loads(inspect(FIXTURES / "llama3-tiny", "--cache", 32, "--json").stdout)["decode_speed"]["rows"]
    default = base["default"]["bytes_per_token"]
    plan = plan_with_extra_weights(tmp_path / "q.json", default)  # reads twice the default
    r = inspect(FIXTURES / "llama3-tiny", "--cache", 32, "--json", "--plan", plan)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)["decode_speed"]["rows"]
    assert rows["plan"]["bytes_per_token"] == 2 * default
    for k in ("tokens_per_s_low", "tokens_per_s_high"):
        assert rows["plan"][k] == pytest.approx(rows["default"][k] / 2)
        assert rows["default"][k] == base["default"][k]
    text = inspect(FIXTURES / "llama3-tiny", "--cache", 32, "--plan", plan).stdout
    line = next(x for x in text.splitlines() if x.startswith("  with plan  "))
    assert "tokens/s" in line, line

    eight = plan_with_extra_weights(tmp_path / "q8.json", 0, default_mode="a8_w8")
    rows = json.loads(inspect(FIXTURES / "llama3-tiny", "--cache", 32, "--json", "--plan", eight).stdout)
    assert rows["decode_speed"]["rows"]["plan"]["bytes_per_token"] == \
        rows["decode_speed"]["rows"]["all_8bit"]["bytes_per_token"]
