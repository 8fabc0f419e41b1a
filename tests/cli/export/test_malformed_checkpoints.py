"""`llm2hef export` on broken checkpoint folders.

Each case starts from a tiny valid GPT-2 checkpoint written here (numpy plus a
small safetensors writer, no safetensors package), breaks one thing, and
expects: exit status 3 (bad input), a message on stderr naming the offending
file, and no output folder (nor a staging folder) left behind.

The binary comes from $LLM2HEF_BIN (ctest sets it), else build/llm2hef.
"""
from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from llm2hef_cli import BIN

TIMEOUT_S = 300

EMBD, HEADS, LAYERS, POSITIONS, VOCAB = 16, 2, 1, 32, 40
EOS = VOCAB - 1

# --------------------------------------------------------------------------- writing checkpoints

_NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8"}


def tensor_bytes(arr: np.ndarray, dtype: str) -> bytes:
    if dtype == "BF16":  # truncate float32 to its upper half (exact for the values we write)
        return (np.ascontiguousarray(arr, "<f4").view("<u4") >> 16).astype("<u2").tobytes()
    return np.ascontiguousarray(arr, _NUMPY[dtype]).tobytes()


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], dtypes: dict[str, str] | None = None,
                      header_hook=None) -> None:
    """Tensors back to back in dict order; header padded to 8 bytes with spaces.

    `dtypes` overrides the dtype string per tensor (the bytes follow it when
    numpy knows it, else F32 bytes are written); `header_hook(header)` may
    edit the header dict before it is serialized.
    """
    dtypes = dtypes or {}
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        dtype = dtypes.get(name, "F32")
        raw = tensor_bytes(arr, dtype if dtype in _NUMPY or dtype == "BF16" else "F32")
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if header_hook:
        header_hook(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def gpt2_tensors(seed: int = 0) -> dict[str, np.ndarray]:
    """openai-community/gpt2 naming (no 'transformer.' prefix), Conv1D layout [in, out]."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return rng.normal(0.0, 0.02, shape).astype(np.float32)

    def norm(n):
        return (1.0 + rng.normal(0.0, 0.02, n)).astype(np.float32)

    t = {"wte.weight": w(VOCAB, EMBD), "wpe.weight": w(POSITIONS, EMBD)}
    for i in range(LAYERS):
        p = f"h.{i}."
        t |= {
            p + "ln_1.weight": norm(EMBD), p + "ln_1.bias": w(EMBD),
            p + "attn.c_attn.weight": w(EMBD, 3 * EMBD), p + "attn.c_attn.bias": w(3 * EMBD),
            p + "attn.c_proj.weight": w(EMBD, EMBD), p + "attn.c_proj.bias": w(EMBD),
            p + "ln_2.weight": norm(EMBD), p + "ln_2.bias": w(EMBD),
            p + "mlp.c_fc.weight": w(EMBD, 4 * EMBD), p + "mlp.c_fc.bias": w(4 * EMBD),
            p + "mlp.c_proj.weight": w(4 * EMBD, EMBD), p + "mlp.c_proj.bias": w(EMBD),
        }
    t |= {"ln_f.weight": norm(EMBD), "ln_f.bias": w(EMBD)}
    return t


def tokenizer_json() -> dict:
    """A byte-level BPE tokenizer whose ids all fit the 40-token vocab."""
    chars = "abcdefghijklmnopqrstuvwxyz" + "\u0120.,!?'" + "0123456"  # \u0120 is byte-level space
    assert len(chars) == EOS
    eot = {"id": EOS, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
           "normalized": True, "special": True}
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [eot], "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": byte_level, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": {c: i for i, c in enumerate(chars)} | {"<|endoftext|>": EOS}, "merges": []},
    }


def write_checkpoint(d: Path, *, sharded: bool = False, dtypes=None, header_hook=None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "activation_function": "gelu_new",
        "n_embd": EMBD, "n_head": HEADS, "n_layer": LAYERS, "n_positions": POSITIONS, "n_ctx": POSITIONS,
        "vocab_size": VOCAB, "layer_norm_epsilon": 1e-5, "bos_token_id": EOS, "eos_token_id": EOS,
    }
    (d / "config.json").write_text(json.dumps(config, indent=2))
    (d / "generation_config.json").write_text(json.dumps({"bos_token_id": EOS, "eos_token_id": EOS}))
    (d / "tokenizer.json").write_text(json.dumps(tokenizer_json()))
    (d / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "model_max_length": POSITIONS}))
    tensors = gpt2_tensors()
    if not sharded:
        write_safetensors(d / "model.safetensors", tensors, dtypes, header_hook)
        return d
    names = list(tensors)
    half = len(names) // 2
    shards = {"model-00001-of-00002.safetensors": names[:half], "model-00002-of-00002.safetensors": names[half:]}
    weight_map = {}
    for shard, members in shards.items():
        write_safetensors(d / shard, {n: tensors[n] for n in members}, dtypes)
        weight_map |= {n: shard for n in members}
    (d / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": sum(a.nbytes for a in tensors.values())}, "weight_map": weight_map}))
    return d


# --------------------------------------------------------------------------- running the CLI


def export(ckpt: Path, out: Path) -> subprocess.CompletedProcess:
    if not BIN.exists():
        pytest.fail(f"llm2hef binary not found at {BIN}; build it or set LLM2HEF_BIN")
    cmd = [str(BIN), "export", str(ckpt), "-o", str(out), "--cache", "16", "--prefill", "8", "--adapter", "gpt2"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)


def expect_refused(tmp_path: Path, ckpt: Path, must_name: list[str], status: int = 3) -> str:
    outs = tmp_path / "outs"
    outs.mkdir()
    out = outs / "out"
    r = export(ckpt, out)
    assert r.returncode == status, f"exit {r.returncode}, expected {status}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    for text in must_name:
        assert text in r.stderr, f"{text!r} not named in stderr: {r.stderr}"
    assert not out.exists(), "output folder left behind"
    assert list(outs.iterdir()) == [], f"leftovers next to OUT: {list(outs.iterdir())}"
    return r.stderr


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    return write_checkpoint(tmp_path / "ckpt")


@pytest.fixture
def sharded(tmp_path: Path) -> Path:
    return write_checkpoint(tmp_path / "ckpt", sharded=True)


# --------------------------------------------------------------------------- cases


def test_valid_checkpoint_exports(tmp_path: Path, ckpt: Path):
    out = tmp_path / "out"
    r = export(ckpt, out)
    assert r.returncode == 0, f"stdout: {r.stdout}\nstderr: {r.stderr}"
    assert (out / "model.onnx").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name not in ("ckpt", "out")] == []


def test_valid_sharded_checkpoint_exports(tmp_path: Path, sharded: Path):
    out = tmp_path / "out"
    r = export(sharded, out)
    assert r.returncode == 0, f"stdout: {r.stdout}\nstderr: {r.stderr}"
    assert (out / "model.onnx").is_file()


def test_no_config(tmp_path, ckpt):
    (ckpt / "config.json").unlink()
    expect_refused(tmp_path, ckpt, [str(ckpt), "config.json is missing"])


def test_config_not_json(tmp_path, ckpt):
    (ckpt / "config.json").write_text('{"model_type": "gpt2",')
    expect_refused(tmp_path, ckpt, [str(ckpt / "config.json"), "not valid JSON"])


def test_missing_weights(tmp_path, ckpt):
    (ckpt / "model.safetensors").unlink()
    expect_refused(tmp_path, ckpt, [str(ckpt), "model.safetensors"])


def test_truncated_safetensors(tmp_path, ckpt):
    f = ckpt / "model.safetensors"
    f.write_bytes(f.read_bytes()[:-100])
    expect_refused(tmp_path, ckpt, [str(f), "past the end"])


def test_truncated_inside_header(tmp_path, ckpt):
    f = ckpt / "model.safetensors"
    f.write_bytes(f.read_bytes()[:200])
    expect_refused(tmp_path, ckpt, [str(f), "header length"])


def test_bad_header_json(tmp_path, ckpt):
    f = ckpt / "model.safetensors"
    data = f.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    broken = b'{"wte.weight": {"dtype": "F32", ['.ljust(n)
    f.write_bytes(data[:8] + broken + data[8 + n:])
    expect_refused(tmp_path, ckpt, [str(f), "not valid JSON"])


def test_wrong_byte_range(tmp_path):
    def shorten(header):
        begin, end = header["h.0.ln_1.bias"]["data_offsets"]
        header["h.0.ln_1.bias"]["data_offsets"] = [begin, end - 4]

    ckpt = write_checkpoint(tmp_path / "ckpt", header_hook=shorten)
    expect_refused(tmp_path, ckpt, [str(ckpt / "model.safetensors"), "'h.0.ln_1.bias'"])


def test_overlapping_ranges(tmp_path):
    def overlap(header):
        header["ln_f.bias"]["data_offsets"] = header["ln_f.weight"]["data_offsets"]

    ckpt = write_checkpoint(tmp_path / "ckpt", header_hook=overlap)
    expect_refused(tmp_path, ckpt, [str(ckpt / "model.safetensors"), "overlap"])


def test_missing_shard(tmp_path, sharded):
    shard = sharded / "model-00002-of-00002.safetensors"
    shard.unlink()
    expect_refused(tmp_path, sharded, [str(sharded / "model.safetensors.index.json"), str(shard)])


def test_tensor_missing_from_shard(tmp_path, sharded):
    index = sharded / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    # Claim a first-shard tensor lives in the second shard.
    doc["weight_map"]["wte.weight"] = "model-00002-of-00002.safetensors"
    index.write_text(json.dumps(doc))
    expect_refused(tmp_path, sharded, [str(index), "'wte.weight'", "model-00002-of-00002.safetensors"])


def test_shard_outside_folder(tmp_path, sharded):
    index = sharded / "model.safetensors.index.json"
    doc = json.loads(index.read_text())
    doc["weight_map"]["wte.weight"] = "../model-00001-of-00002.safetensors"
    index.write_text(json.dumps(doc))
    expect_refused(tmp_path, sharded, [str(index), "'wte.weight'"])


def test_unknown_dtype_for_needed_weight(tmp_path):
    ckpt = write_checkpoint(tmp_path / "ckpt", dtypes={"h.0.attn.c_attn.weight": "Q4_K"})
    expect_refused(tmp_path, ckpt, [str(ckpt / "model.safetensors"), "'h.0.attn.c_attn.weight'", "Q4_K"])


def test_unreadable_dtype_for_needed_weight(tmp_path):
    # F64 is a valid safetensors dtype that llm2hef does not read: refused as
    # unsupported (exit 4), possibly after the output folder was started, so
    # this also checks that a failure mid-export leaves nothing behind.
    ckpt = write_checkpoint(tmp_path / "ckpt", dtypes={"h.0.mlp.c_fc.weight": "F64"})
    expect_refused(tmp_path, ckpt, [str(ckpt / "model.safetensors"), "'h.0.mlp.c_fc.weight'", "F64"], status=4)
