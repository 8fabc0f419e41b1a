"""GGUF checkpoints through `llm2hef export` and `inspect`.

Each family's tiny fixture is converted to GGUF at test time as llama.cpp's
converter does it (tools/fixtures/make_gguf_fixtures.py, numpy + gguf only),
then exported from a folder holding the .gguf and the fixture's tokenizer
files; the graph and its weights must equal, byte for byte, the export of the
equivalent HF folder (F32 GGUF: exact weights). Hostile files must stop with
exit 3, a message naming the file and the key or tensor, and nothing written.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
TIMEOUT_S = 300

gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
_spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
fx = importlib.util.module_from_spec(_spec)
sys.modules["make_gguf_fixtures"] = fx
_spec.loader.exec_module(fx)

FAMILIES = fx.DEFAULT_FIXTURES  # tests/family_table.py: every family's gguf_fixtures


def run(*args, check=False):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S)
    if check and r.returncode != 0:
        raise AssertionError(f"llm2hef {' '.join(map(str, args))} -> {r.returncode}\n{r.stderr}")
    return r


def gguf_folder(tmp: Path, name: str, qtype: str = "F32", split: int = 0) -> tuple[Path, Path]:
    """(folder with the .gguf and the HF tokenizer files, equivalent HF folder)."""
    made = tmp / "made"
    fx.convert(REPO / "tests/fixtures" / name, made, qtype, split)
    folder = tmp / f"{name}-gguf"
    folder.mkdir()
    for p in made.glob(f"{name}*.gguf"):
        shutil.move(str(p), folder / p.name)
    for t in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (made / f"{name}-hf" / t).exists():
            shutil.copy(made / f"{name}-hf" / t, folder / t)
    return folder, made / f"{name}-hf"


def export(src: Path, out: Path, *extra):
    return run("export", src, "-o", out, "--cache", 32, "--prefill", 8, "--name", "m", *extra)


@pytest.mark.parametrize("name", FAMILIES)
def test_gguf_export_equals_hf_export(tmp_path, name):
    folder, hf = gguf_folder(tmp_path, name)
    a, b = tmp_path / "hf-out", tmp_path / "gguf-out"
    extra = ("--gelu", "tanh") if "gelu" in fx.BY_FIXTURE[name].options else ()  # gelu_new exactly
    r = export(hf, a, *extra)
    assert r.returncode == 0, r.stderr
    r = export(folder, b, *extra)
    assert r.returncode == 0, r.stderr
    assert "GGUF weights:" in r.stderr
    assert (a / "model.onnx").read_bytes() == (b / "model.onnx").read_bytes()
    assert (a / "model.onnx.data").read_bytes() == (b / "model.onnx.data").read_bytes()


def test_phi2_gguf_with_fused_qkv_equals_hf_export(tmp_path):
    """phi-2 GGUFs converted from Microsoft's first layout hold one attn_qkv per block, which
    llama.cpp's phi2 graph reads as rows [q; k; v]: split back to q_proj / k_proj / v_proj."""
    made = tmp_path / "made"
    path = fx.convert(REPO / "tests/fixtures/phi2-tiny", made, "F32", fused_qkv=True)
    assert "blk.0.attn_qkv.weight" in {t.name for t in gguf.GGUFReader(str(path)).tensors}
    folder = tmp_path / "gguf"
    folder.mkdir()
    shutil.move(str(path), folder / path.name)
    for t in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(made / "phi2-tiny-hf" / t, folder / t)
    a, b = tmp_path / "hf-out", tmp_path / "gguf-out"
    assert export(made / "phi2-tiny-hf", a, "--gelu", "tanh").returncode == 0
    r = export(folder, b, "--gelu", "tanh")
    assert r.returncode == 0, r.stderr
    assert (a / "model.onnx").read_bytes() == (b / "model.onnx").read_bytes()
    assert (a / "model.onnx.data").read_bytes() == (b / "model.onnx.data").read_bytes()


def test_split_gguf_equals_single_file(tmp_path):
    folder, hf = gguf_folder(tmp_path, "llama3-tiny", split=5)
    parts = sorted(folder.glob("*.gguf"))
    assert len(parts) > 1 and parts[0].name.endswith("-00001-of-%05d.gguf" % len(parts))
    r = export(folder, tmp_path / "a")
    assert r.returncode == 0, r.stderr
    assert export(hf, tmp_path / "b").returncode == 0
    assert (tmp_path / "a/model.onnx.data").read_bytes() == (tmp_path / "b/model.onnx.data").read_bytes()
    # A missing part is named.
    parts[-1].unlink()
    r = export(folder, tmp_path / "c")
    assert r.returncode == 3 and parts[-1].name in r.stderr and not (tmp_path / "c").exists()


@pytest.mark.parametrize("qtype", ["Q8_0", "Q4_1", "F16"])
def test_quantized_gguf_exports_and_says_so(tmp_path, qtype):
    folder, _ = gguf_folder(tmp_path, "qwen3-tiny", qtype)
    r = export(folder, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert qtype in r.stderr
    assert ("second rounding" in r.stderr) == (qtype != "F16")
    r = run("inspect", folder)
    assert r.returncode == 0, r.stderr
    assert "GGUF weights:" in r.stdout and qtype in r.stdout


def test_inspect_takes_a_bare_gguf_file(tmp_path):
    folder, _ = gguf_folder(tmp_path, "gemma2-tiny")
    r = run("inspect", folder / "gemma2-tiny.gguf", "--cache", 32)
    # This file carries no tokenizer, so export of it would stop (exit 3, as
    # inspect now says); the rest of the report is still there.
    assert r.returncode == 3, r.stderr
    assert "EXPORT WOULD STOP" in r.stdout and "tokenizer.ggml.model" in r.stdout
    assert "query_pre_attn_scalar" in r.stdout  # the assumption is stated


# ---------------------------------------------------------------- hostile files

def gguf_bytes(kvs: list[tuple[str, int, bytes]], tensors: list[tuple[str, list[int], int, int]], data: bytes,
               version: int = 3, align: int = 32) -> bytes:
    """A GGUF file field by field (docs/gguf.md), so that any field can be wrong."""
    def s(x: str) -> bytes:
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + v
    for n, ne, t, off in tensors:
        out += s(n) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, off)
    out += b"\0" * (-len(out) % align)
    return out + data


def string_value(x: str) -> bytes:
    return struct.pack("<Q", len(x.encode())) + x.encode()


def llama_kvs(arch=b"llama", block_count=struct.pack("<I", 1)):
    return [("general.architecture", 8, struct.pack("<Q", len(arch)) + arch),
            ("llama.block_count", 4, block_count),
            ("llama.embedding_length", 4, struct.pack("<I", 32)),
            ("llama.attention.head_count", 4, struct.pack("<I", 2))]


EMB = ("token_embd.weight", [32, 8], 0, 0)


HOSTILE = {
    "truncated": (lambda: gguf_bytes(llama_kvs(), [EMB], b"\0" * 1024)[:-300], "runs past the end"),
    "offset_past_end": (lambda: gguf_bytes(llama_kvs(), [("token_embd.weight", [32, 8], 0, 4096)], b"\0" * 1024),
                        "'token_embd.weight'"),
    "huge_string_length": (lambda: gguf_bytes([("general.architecture", 8, struct.pack("<Q", 2**64 - 5) + b"x" * 64)],
                                              [], b""), "'general.architecture'"),
    "huge_array_count": (lambda: gguf_bytes([("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, 2**63))], [], b""),
                         "'tokenizer.ggml.tokens'"),
    "wrong_value_type": (lambda: None, "'llama.block_count' is a string, expected an integer"),
    "unknown_architecture": (lambda: gguf_bytes(llama_kvs(arch=b"mamba"), [EMB], b"\0" * 1024), "'mamba'"),
    "unknown_tensor_type": (lambda: gguf_bytes(llama_kvs(), [("token_embd.weight", [32, 8], 77, 0)], b"\0" * 1024),
                            "unknown ggml type 77"),
    "duplicate_tensor": (lambda: gguf_bytes(llama_kvs(), [EMB, ("token_embd.weight", [32, 8], 0, 1024)], b"\0" * 2048),
                         "appears twice"),
    "duplicate_key": (lambda: gguf_bytes(llama_kvs() + [("llama.block_count", 4, struct.pack("<I", 1))], [EMB],
                                         b"\0" * 1024), "'llama.block_count' appears twice"),
    "misaligned": (lambda: gguf_bytes(llama_kvs(), [("token_embd.weight", [32, 8], 0, 8)], b"\0" * 2048),
                   "not a multiple of the alignment"),
    # Found by fuzz_gguf_header: a count near 2^24 had LFM2's reading build a per-layer list until
    # memory ran out; every architecture's count is bounded before anything is built per layer.
    "huge_block_count": (lambda: gguf_bytes(llama_kvs(block_count=struct.pack("<I", 2**24)), [EMB], b"\0" * 1024),
                         "'llama.block_count' is 16777216, expected 0..4096"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_gguf_is_refused_with_nothing_written(tmp_path, case):
    make, needle = HOSTILE[case]
    # The wrong-type case: block_count written as a string (type 8) instead of uint32.
    data = make()
    if case == "wrong_value_type":
        kvs = llama_kvs()
        kvs[1] = ("llama.block_count", 8, string_value("one"))
        data = gguf_bytes(kvs, [EMB], b"\0" * 1024)
    path = tmp_path / "bad.gguf"
    path.write_bytes(data)
    out = tmp_path / "out"
    r = export(path, out)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert str(path) in r.stderr and needle in r.stderr, r.stderr
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_unsupported_quant_type_is_refused_naming_tensor_and_type(tmp_path):
    kvs = llama_kvs()
    # IQ2_XXS (16): a valid ggml type llm2hef does not dequantize; 256 values in 66 bytes.
    path = tmp_path / "iq.gguf"
    path.write_bytes(gguf_bytes(kvs, [("token_embd.weight", [256, 1], 16, 0)], b"\0" * 96))
    r = run("inspect", path)
    assert r.returncode in (3, 4), r.stderr
    r = export(path, tmp_path / "out")
    assert r.returncode in (3, 4) and not (tmp_path / "out").exists()


# ---------------------------------------------------------------- Llama 3 RoPE the factors leave open

# rope_scaling of the llama3-tiny fixture (head_dim 16, theta 500000: 8 frequencies, wavelengths
# 6.3, 33, 168, 864, 4443, 22846, ...). With fewer than two of them between original / high and
# original / low, the stored factors fix the model but not the rule's parameters.
FEW_SMOOTHED = {
    # Llama 3.2's published parameters: one frequency smoothed.
    "llama32": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192},
    # Others: one smoothed, none smoothed.
    "one": {"factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 2.0, "original_max_position_embeddings": 6000},
    "none": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 2.0, "original_max_position_embeddings": 2048},
}


@pytest.mark.parametrize("case", sorted(FEW_SMOOTHED))
def test_llama3_rope_with_fewer_than_two_smoothed_factors(tmp_path, case):
    """The fixture's rope_freqs.weight is written as conversion/llama.py generate_extra_tensors
    writes it (make_gguf_fixtures.llama3_factors); export rebuilds a rope_scaling that reproduces
    every stored factor, and the graph equals the HF folder's. Meta's parameters are rebuilt as
    they were (theta.npy identical); others as an equivalent set (theta.npy within float32 rounding)."""
    src = tmp_path / "llama3-tiny"
    shutil.copytree(REPO / "tests/fixtures/llama3-tiny", src)
    cfg = json.loads((src / "config.json").read_text())
    cfg["rope_scaling"] = {**FEW_SMOOTHED[case], "rope_type": "llama3"}
    (src / "config.json").write_text(json.dumps(cfg, indent=2))
    made = tmp_path / "made"
    gguf_path = fx.convert(src, made, "F32")
    factors = fx.llama3_factors(fx.rope_params(cfg), 16)
    assert np.sum((factors > 1) & (factors < cfg["rope_scaling"]["factor"])) == (0 if case == "none" else 1)
    folder = tmp_path / "gguf"
    folder.mkdir()
    shutil.move(str(gguf_path), folder / gguf_path.name)
    for t in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(src / t, folder / t)
    a, b = tmp_path / "hf-out", tmp_path / "gguf-out"
    r = export(made / "llama3-tiny-hf", a)
    assert r.returncode == 0, r.stderr
    r = export(folder, b)
    assert r.returncode == 0, r.stderr
    assert "Llama 3 scaling rebuilt from rope_freqs.weight" in r.stderr
    assert (a / "model.onnx").read_bytes() == (b / "model.onnx").read_bytes()
    assert (a / "model.onnx.data").read_bytes() == (b / "model.onnx.data").read_bytes()
    want, got = np.load(a / "resources/theta.npy"), np.load(b / "resources/theta.npy")
    if case == "llama32":
        assert want.tobytes() == got.tobytes()
    else:
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=0)


def test_qwen2_gguf_announces_no_o_proj_bias(tmp_path):
    """Qwen2 has q/k/v biases and no o_proj bias; inspect of its GGUF says what the HF folder's says."""
    folder, hf = gguf_folder(tmp_path, "qwen2-tiny")
    got, want = run("inspect", folder, check=True).stdout, run("inspect", hf, check=True).stdout
    assert "q/k/v projection biases" in got
    assert "q/k/v/o" not in got and "q/k/v/o" not in want


# ---------------------------------------------------------------- the rows (core/src/checkpoint/gguf/)

def test_every_family_table_gguf_arch_has_a_row(tmp_path):
    """The architectures read are the rows' (one file each under core/src/checkpoint/gguf/, the table
    generated from the files): an unknown one is refused listing them, and every family that
    tests/family_table.py gives a GGUF architecture is among them, once."""
    spec = importlib.util.spec_from_file_location("family_table", REPO / "tests/family_table.py")
    table = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("family_table", table)  # its dataclasses look their module up
    spec.loader.exec_module(table)
    path = tmp_path / "mamba.gguf"
    path.write_bytes(gguf_bytes(llama_kvs(arch=b"mamba"), [EMB], b"\0" * 1024))
    r = run("inspect", path)
    assert r.returncode == 3, r.stderr
    listed = r.stderr.split("(it reads: ")[1].split(")")[0].split(", ")
    assert len(listed) == len(set(listed)), listed
    assert {f.gguf_arch for f in table.FAMILIES if f.gguf_arch} <= set(listed), listed
