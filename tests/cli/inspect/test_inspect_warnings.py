"""What `inspect` says beyond "fits" (issues 28 and 40): it exits as export
would when export would stop; it warns close to the device's memory, on a
hidden size with known fidelity loss, on calibration RAM past a 32 GB machine
and when a model is tight on the 8 GB device; and `--plan` refuses a plan made
for another model or cache. The large checkpoints are headers over sparse
zeros: inspect reads shapes, never values."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


def copy_fixture(tmp_path, name="qwen2-tiny", edit=None):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    if edit:
        cfg = json.loads((dst / "config.json").read_text())
        edit(cfg)
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def test_inspect_exits_as_export_when_export_would_stop(tmp_path):
    model = copy_fixture(tmp_path)
    (model / "tokenizer.json").unlink()
    r = run("inspect", model)
    assert "EXPORT WOULD STOP" in r.stdout
    e = run("export", model, "-o", tmp_path / "out", "--cache", 32)
    assert e.returncode == 3
    assert r.returncode == e.returncode
    rep = json.loads(run("inspect", model, "--json").stdout)
    assert rep["resources"]["exit_status"] == 3


def llama_shaped(folder, hidden=4096, layers=32, heads=32, vocab=32000, ffn=11008, positions=32768):
    """A Llama-2-7B-shaped checkpoint whose weights are sparse zeros (header
    and size only: inspect reads shapes, never values)."""
    folder.mkdir(parents=True)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
           "intermediate_size": ffn, "vocab_size": vocab, "max_position_embeddings": positions,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
           "torch_dtype": "float16"}
    (folder / "config.json").write_text(json.dumps(cfg))
    shapes = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden],
              "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        p = "model.layers.%d." % i
        for w in ("q", "k", "v", "o"):
            shapes[p + "self_attn.%s_proj.weight" % w] = [hidden, hidden]
        shapes[p + "mlp.gate_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.up_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.down_proj.weight"] = [hidden, ffn]
        shapes[p + "input_layernorm.weight"] = [hidden]
        shapes[p + "post_attention_layernorm.weight"] = [hidden]
    header, offset = {}, 0
    for name, shape in sorted(shapes.items()):
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        f.truncate(8 + len(blob) + offset)  # sparse zeros
    return folder


def test_inspect_warns_close_to_the_device_memory(tmp_path):
    model = llama_shaped(tmp_path / "llama-7b-shape")
    base = json.loads(run("inspect", model, "--cache", 2048, "--json").stdout)
    m, d = base["memory"], base["dims"]
    per_position = 2 * d["layers"] * d["heads"] * d["head_dim"]
    fixed = m["total_bytes"] - m["kv_cache_bytes"]
    device = m["device_bytes"]
    near = (int(device * 0.98) - fixed) // per_position
    far = (int(device * 0.80) - fixed) // per_position
    assert 2048 < far < near <= 32768
    rep = json.loads(run("inspect", model, "--cache", near, "--json").stdout)
    assert rep["memory"]["fits"] is True
    assert "within 5%" in rep["memory"]["warning"]
    assert "warning: the estimate is within 5%" in run("inspect", model, "--cache", near).stdout
    rep = json.loads(run("inspect", model, "--cache", far, "--json").stdout)
    assert rep["memory"]["fits"] is True and "warning" not in rep["memory"]


def write_safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    """Zero F16 tensors of these shapes (inspect reads shapes only)."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + offset)  # zeros, without building them in memory


def llama_like(tmp: Path, *, hidden: int, heads: int, kv_heads: int, head_dim: int, layers: int) -> Path:
    """llama3-tiny's tokenizer and config with other shapes."""
    model = tmp / f"llama-h{hidden}"
    model.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(FIXTURES / "llama3-tiny" / f, model / f)
    config = json.loads((FIXTURES / "llama3-tiny" / "config.json").read_text())
    inter, vocab = 64, config["vocab_size"]
    config.update(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                  num_hidden_layers=layers, intermediate_size=inter)
    (model / "config.json").write_text(json.dumps(config))
    t = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden], "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        p = f"model.layers.{i}."
        t |= {p + "input_layernorm.weight": [hidden], p + "post_attention_layernorm.weight": [hidden],
              p + "self_attn.q_proj.weight": [heads * head_dim, hidden],
              p + "self_attn.k_proj.weight": [kv_heads * head_dim, hidden],
              p + "self_attn.v_proj.weight": [kv_heads * head_dim, hidden],
              p + "self_attn.o_proj.weight": [hidden, heads * head_dim],
              p + "mlp.gate_proj.weight": [inter, hidden], p + "mlp.up_proj.weight": [inter, hidden],
              p + "mlp.down_proj.weight": [hidden, inter]}
    write_safetensors(model / "model.safetensors", t)
    return model


def test_inspect_warns_on_hidden_size_with_known_fidelity_loss_and_on_calibration_ram(tmp_path):
    # hidden 576 (SmolLM2-135M's), 36 heads at cache 2048: compile.py's 64
    # calibration samples hold a 2048 x 36 x 2048 mask each, past 32 GB.
    model = llama_like(tmp_path, hidden=576, heads=36, kv_heads=12, head_dim=16, layers=1)
    r = run("inspect", model, "--cache", 2048, "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert "576" in js["fidelity_warning"] and "llm2hef calibrate" in js["fidelity_warning"]
    why = js["calibration"]["memory_warning"]
    assert "32 GB" in why and "--calib-size" in why and "64 GB: both fit" in why, why
    text = run("inspect", model, "--cache", 2048).stdout
    assert text.count("warning: ") >= 2 and "section 12" in text
    # A smaller model and cache: none of these warnings.
    small = run("inspect", FIXTURES / "llama3-tiny", "--cache", 256, "--json")
    js = json.loads(small.stdout)
    assert "fidelity_warning" not in js and "memory_warning" not in js["calibration"]
    assert js["memory"]["tight"] is False


def test_inspect_says_when_the_model_is_tight_on_the_device(tmp_path):
    # 20 layers caching 64 heads x 128 at cache 8192: about 2.5 GiB of K/V, more
    # than the largest model Hailo ships for the device, well under 8 GiB.
    model = llama_like(tmp_path, hidden=64, heads=64, kv_heads=1, head_dim=128, layers=22)
    cfg = json.loads((model / "config.json").read_text())
    cfg["max_position_embeddings"] = 8192
    (model / "config.json").write_text(json.dumps(cfg))
    r = run("inspect", model, "--cache", 8192, "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["memory"]
    assert m["fits"] is True and m["tight"] is True, m
    text = run("inspect", model, "--cache", 8192).stdout
    assert "tight: " in text and "Llama3.2-3B-Instruct" in text


def plan(path: Path, **fields) -> Path:
    doc = {"version": 1, "plan": {"default_mode": "a8_w4", "lines": []},
           "budget": {"extra_weight_bytes": 0, "extra_activation_bytes": 0, "weight_bytes_default": 0}} | fields
    path.write_text(json.dumps(doc))
    return path


def test_inspect_plan_refuses_a_plan_for_another_model_or_cache(tmp_path):
    gpt2 = FIXTURES / "gpt2-tiny"
    ok = plan(tmp_path / "ok.json", model="gpt2-tiny", calibration={"cache_size": 32})
    assert run("inspect", gpt2, "--cache", 32, "--plan", ok).returncode == 0
    other = plan(tmp_path / "other.json", model="qwen3-tiny", calibration={"cache_size": 32})
    r = run("inspect", gpt2, "--cache", 32, "--plan", other)
    assert r.returncode == 3 and str(other) in r.stderr and "'qwen3-tiny'" in r.stderr and "'gpt2-tiny'" in r.stderr
    r = run("inspect", gpt2, "--cache", 64, "--plan", ok)
    assert r.returncode == 3 and "calibration.cache_size" in r.stderr and "--cache 32" in r.stderr, r.stderr
