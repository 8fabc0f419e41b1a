"""GGUF files that say something a Hugging Face config cannot carry are refused, not read as something else
(issue 41, items 11-14, and the GGUF parts of 19-20).

Each case takes a fixture converted to GGUF as llama.cpp's converter does it (tools/fixtures/make_gguf_fixtures.py)
and rewrites one metadata key or tensor with gguf-py: a partial-rotary count in a family without partial rotary,
tensors past block_count, a RoPE scaling type beside per-frequency factors that contradict it, factors that are no
model's, a value length or expert count the family has no place for, weight types llm2hef does not dequantize. The
refusal must name the file and the key or tensor, with exit 3 (bad input) or 4 (unsupported), and nothing written;
the neutral value of each key must still convert. The last tests cover the folder in $TMPDIR that holds a
tokenizer.json built from the metadata: removed on SIGTERM, swept after a SIGKILL, and an unusable $TMPDIR named.
"""
from __future__ import annotations

import fcntl
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
TIMEOUT_S = 120

gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
np = pytest.importorskip("numpy")
_spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
fx = importlib.util.module_from_spec(_spec)
sys.modules["make_gguf_fixtures"] = fx
_spec.loader.exec_module(fx)

VT = gguf.GGUFValueType
QT = gguf.GGMLQuantizationType
DROP = None  # a value in rewrite(): remove the key or tensor


def run(*args, env=None):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S,
                          env=None if env is None else {**os.environ, **env})


def export(src: Path, out: Path, *extra, env=None):
    return run("export", src, "-o", out, "--cache", 32, "--prefill", 8, "--name", "m", *extra, env=env)


def head_dim(name: str) -> int:
    c = json.loads((FIXTURES / name / "config.json").read_text())
    hidden = c.get("hidden_size", c.get("n_embd"))
    return c.get("head_dim") or hidden // c.get("num_attention_heads", c.get("n_head"))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """name -> the fixture's F32 .gguf, converted once per module."""
    made = tmp_path_factory.mktemp("converted")
    cache: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in cache:
            cache[name] = fx.convert(FIXTURES / name, made / name)
        return cache[name]
    return get


def rewrite(src: Path, dst: Path, kv: dict | None = None, tensors: dict | None = None) -> Path:
    """src with metadata keys set (key -> (value, type[, element type]) or DROP) and tensors replaced (name -> F32
    array, a ggml type to store the tensor's shape as zeros of, or DROP)."""
    kv, tensors = kv or {}, tensors or {}
    reader = gguf.GGUFReader(str(src))
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(str(dst), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture" or key in kv:
            continue
        sub = field.types[-1] if field.types[0] == VT.ARRAY else None
        w.add_key_value(key, field.contents(), field.types[0], sub)
    for key, spec in kv.items():
        if spec is not DROP:
            w.add_key_value(key, spec[0], spec[1], spec[2] if len(spec) > 2 else None)
    stored = {t.name: t for t in reader.tensors}
    for name in list(stored) + [n for n in tensors if n not in stored]:
        spec = tensors.get(name, stored.get(name))
        if spec is DROP:
            continue
        if isinstance(spec, QT):
            shape = [int(d) for d in reversed(stored[name].shape)]  # torch order
            block, size = gguf.GGML_QUANT_SIZES[spec]
            if spec == QT.I8:
                w.add_tensor(name, np.zeros(shape, np.int8))
            elif spec == QT.I32:
                w.add_tensor(name, np.zeros(shape, np.int32))
            else:
                w.add_tensor(name, np.zeros(shape[:-1] + [shape[-1] // block * size], np.uint8), raw_dtype=spec)
        elif isinstance(spec, np.ndarray):
            w.add_tensor(name, np.ascontiguousarray(spec, np.float32))
        else:
            w.add_tensor(name, np.array(spec.data, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return dst


def model_folder(tmp: Path, converted, name: str, kv=None, tensors=None) -> Path:
    """A folder with the rewritten .gguf and the fixture's tokenizer files (so that only the edit can stop it)."""
    folder = tmp / f"{name}-gguf"
    folder.mkdir()
    rewrite(converted(name), folder / f"{name}.gguf", kv, tensors)
    for t in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (FIXTURES / name / t).exists():
            shutil.copy(FIXTURES / name / t, folder / t)
    return folder


def arch_of(path: Path) -> str:
    return gguf.GGUFReader(str(path)).fields["general.architecture"].contents()


def refused(r, status: int, *names: str, out: Path | None = None):
    assert r.returncode == status, (r.returncode, r.stdout, r.stderr)
    text = r.stderr + r.stdout
    for n in names:
        assert n in text, (n, text)
    if out is not None:
        assert not out.exists()
    assert "internal error" not in text.lower()


def u32(v: int):
    return (v, VT.UINT32)


def f32(v: float):
    return (v, VT.FLOAT32)


def string(v: str):
    return (v, VT.STRING)


# ---------------------------------------------------------------- item 11: rope.dimension_count

# Families whose transformers code turns all of head_dim (no partial_rotary_factor): a smaller count is refused.
FULL_ROTARY = ["llama3-tiny", "mistral-tiny", "granite-tiny", "smollm3-tiny", "qwen2-tiny", "qwen3-tiny",
               "gemma2-tiny", "gemma3-tiny", "olmo2-tiny", "lfm2-tiny"]


@pytest.mark.parametrize("name", FULL_ROTARY)
def test_partial_rotary_is_refused_where_the_family_has_none(tmp_path, converted, name):
    hd = head_dim(name)
    arch = arch_of(converted(name))
    folder = model_folder(tmp_path, converted, name, kv={f"{arch}.rope.dimension_count": u32(hd // 2)})
    refused(run("inspect", folder), 4, f"'{arch}.rope.dimension_count' is {hd // 2}", f"head_dim is {hd}",
            str(folder / f"{name}.gguf"))


@pytest.mark.parametrize("name", FULL_ROTARY)
def test_rotary_count_equal_to_head_dim_is_full_rotary(tmp_path, converted, name):
    arch = arch_of(converted(name))
    folder = model_folder(tmp_path, converted, name, kv={f"{arch}.rope.dimension_count": u32(head_dim(name))})
    r = run("inspect", folder)
    assert r.returncode == 0, r.stdout + r.stderr


def test_partial_rotary_export_is_refused_with_nothing_written(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "qwen3-tiny", kv={"qwen3.rope.dimension_count": u32(16)})
    refused(export(folder, tmp_path / "out"), 4, "'qwen3.rope.dimension_count' is 16", "head_dim is 32",
            out=tmp_path / "out")


def test_partial_rotary_is_applied_where_the_family_has_it(tmp_path, converted):
    # (Without the fixture's LongRoPE factors, which are sized for full rotary.)
    folder = model_folder(tmp_path, converted, "phi3-longrope", kv={"phi3.rope.dimension_count": u32(8)},
                          tensors={"rope_factors_long.weight": DROP, "rope_factors_short.weight": DROP})
    r = run("inspect", folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "partial rotary: RoPE on the first 8 of 16" in r.stdout


def test_partial_rotary_refusal_names_every_family_that_has_it(tmp_path, converted):
    # The list is read from the rows that convert partial rotary (Rope::partial): phi2 is one of them.
    folder = model_folder(tmp_path, converted, "qwen3-tiny", kv={"qwen3.rope.dimension_count": u32(16)})
    refused(run("inspect", folder), 4, "llm2hef converts partial rotary for gptneox, phi2, phi3 and stablelm)")


@pytest.mark.parametrize("dims", [0, 7, 34])
def test_rotary_count_that_is_no_head_part_is_bad_input(tmp_path, converted, dims):
    folder = model_folder(tmp_path, converted, "stablelm-tiny", kv={"stablelm.rope.dimension_count": u32(dims)})
    refused(run("inspect", folder), 3, f"'stablelm.rope.dimension_count' is {dims}", "head_dim (32)")


# ---------------------------------------------------------------- item 12: block_count

@pytest.mark.parametrize("name,arch", [("llama3-tiny", "llama"), ("gpt2-tiny", "gpt2")])
def test_tensors_past_block_count_are_refused(tmp_path, converted, name, arch):
    folder = model_folder(tmp_path, converted, name, kv={f"{arch}.block_count": u32(1)})
    extra = ("--gelu", "tanh") if arch == "gpt2" else ()
    refused(export(folder, tmp_path / "out", *extra), 3, "'blk.1.", "belongs to block 1",
            f"'{arch}.block_count' is 1", out=tmp_path / "out")


# ---------------------------------------------------------------- item 13: RoPE scaling

@pytest.mark.parametrize("rope_type", ["linear", "yarn", "longrope"])
def test_rope_freqs_beside_a_declared_scaling_type_is_refused(tmp_path, converted, rope_type):
    # llama3-tiny has Llama 3 scaling, which llama.cpp stores as rope_freqs.weight alone.
    folder = model_folder(tmp_path, converted, "llama3-tiny",
                          kv={"llama.rope.scaling.type": string(rope_type), "llama.rope.scaling.factor": f32(4.0),
                              "llama.rope.scaling.original_context_length": u32(1024)})
    refused(export(folder, tmp_path / "out"), 3, "'rope_freqs.weight'", "'llama.rope.scaling.type'",
            f"'{rope_type}'", out=tmp_path / "out")


def test_rope_freqs_with_scaling_type_none_still_converts(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "llama3-tiny", kv={"llama.rope.scaling.type": string("none")})
    r = run("inspect", folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Llama 3 scaling rebuilt from rope_freqs.weight" in r.stdout


@pytest.mark.parametrize("name", ["llama3-tiny", "qwen3-tiny"])
def test_invented_scaling_type_is_refused(tmp_path, converted, name):
    arch = arch_of(converted(name))
    folder = model_folder(tmp_path, converted, name, kv={f"{arch}.rope.scaling.type": string("ntk-magic"),
                                                         f"{arch}.rope.scaling.factor": f32(2.0)})
    refused(run("inspect", folder), 3, f"'{arch}.rope.scaling.type' is 'ntk-magic'", "none, linear, yarn, longrope")


@pytest.mark.parametrize("fill,text", [(0.0, "0.0"), (-2.0, "-2.0"), (math.nan, "nan"), (math.inf, "inf")],
                         ids=["zero", "negative", "nan", "inf"])
def test_rope_freqs_that_are_no_factors_are_refused(tmp_path, converted, fill, text):
    folder = model_folder(tmp_path, converted, "llama3-tiny",
                          tensors={"rope_freqs.weight": np.full(head_dim("llama3-tiny") // 2, fill, np.float32)})
    refused(run("inspect", folder), 3, f"'rope_freqs.weight' holds {text} at index 0", "positive and finite")


def test_rope_freqs_below_one_are_not_llama3_scaling(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "llama3-tiny",
                          tensors={"rope_freqs.weight": np.full(head_dim("llama3-tiny") // 2, 0.5, np.float32)})
    refused(run("inspect", folder), 4, "'rope_freqs.weight'", "below 1")


@pytest.mark.parametrize("factor,text", [(-2.0, "-2.0"), (0.0, "0.0"), (math.inf, "inf")],
                         ids=["negative", "zero", "inf"])
def test_scaling_factor_that_is_no_factor_is_refused(tmp_path, converted, factor, text):
    folder = model_folder(tmp_path, converted, "qwen3-tiny", kv={"qwen3.rope.scaling.type": string("linear"),
                                                                 "qwen3.rope.scaling.factor": f32(factor)})
    refused(run("inspect", folder), 3, f"'qwen3.rope.scaling.factor' is {text}", "positive and finite")


def test_phi3_factors_beside_another_scaling_type_are_refused(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "phi3-longrope", kv={"phi3.rope.scaling.type": string("yarn"),
                                                                    "phi3.rope.scaling.factor": f32(2.0)})
    refused(run("inspect", folder), 3, "'rope_factors_long.weight'", "'phi3.rope.scaling.type' ('yarn')")
    # longrope is what llama.cpp's converter writes beside them: consistent.
    (tmp_path / "ok").mkdir()
    ok = model_folder(tmp_path / "ok", converted, "phi3-longrope", kv={"phi3.rope.scaling.type": string("longrope")})
    r = run("inspect", ok)
    assert r.returncode == 0, r.stdout + r.stderr


def test_phi3_factor_of_zero_is_refused(tmp_path, converted):
    reader = gguf.GGUFReader(str(converted("phi3-longrope")))
    short = np.array(next(t for t in reader.tensors if t.name == "rope_factors_short.weight").data, np.float32)
    short[3] = 0.0
    folder = model_folder(tmp_path, converted, "phi3-longrope", tensors={"rope_factors_short.weight": short})
    refused(run("inspect", folder), 3, "'rope_factors_short.weight' holds 0.0 at index 3")


# ---------------------------------------------------------------- item 14: lengths, experts, context, weight types

def test_value_length_other_than_key_length_is_refused(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "llama3-tiny", kv={"llama.attention.value_length": u32(32)})
    refused(run("inspect", folder), 4, "'llama.attention.value_length' is 32", "'llama.attention.key_length'", "16")


def test_value_length_other_than_hidden_over_heads_is_refused(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "qwen2-tiny", kv={"qwen2.attention.value_length": u32(8)})
    refused(run("inspect", folder), 4, "'qwen2.attention.value_length' is 8", "hidden / heads", "16")


@pytest.mark.parametrize("key", ["expert_count", "expert_used_count"])
def test_experts_are_refused(tmp_path, converted, key):
    folder = model_folder(tmp_path, converted, "llama3-tiny", kv={f"llama.{key}": u32(8)})
    refused(export(folder, tmp_path / "out"), 4, f"'llama.{key}' is 8", "mixture-of-experts", out=tmp_path / "out")


def test_zero_context_length_is_refused(tmp_path, converted):
    folder = model_folder(tmp_path, converted, "qwen3-tiny", kv={"qwen3.context_length": u32(0)})
    refused(run("inspect", folder), 3, "'qwen3.context_length' is 0")


def test_neutral_values_still_convert(tmp_path, converted):
    hd = head_dim("qwen3-tiny")
    folder = model_folder(tmp_path, converted, "qwen3-tiny",
                          kv={"qwen3.attention.value_length": u32(hd), "qwen3.expert_count": u32(0),
                              "qwen3.rope.scaling.type": string("none")})
    r = export(folder, tmp_path / "out")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("qtype", [QT.I32, QT.I8, QT.Q8_1, QT.MXFP4], ids=lambda q: q.name)
def test_weight_types_export_refuses_are_refused_by_inspect_too(tmp_path, converted, qtype):
    tensor = "blk.0.ffn_down.weight"
    folder = model_folder(tmp_path, converted, "qwen3-tiny", tensors={tensor: qtype})
    r = run("inspect", folder)
    refused(r, 4, f"'{tensor}' has type {qtype.name}", "does not dequantize")
    assert "fits" not in r.stdout
    refused(export(folder, tmp_path / "out"), 4, f"'{tensor}' has type {qtype.name}", out=tmp_path / "out")


# ---------------------------------------------------------------- items 19-20: the folder in $TMPDIR

SCRATCH = "llm2hef-gguf-"


def with_vocabulary(tmp: Path, converted) -> Path:
    """gpt2-tiny as a bare .gguf carrying its vocabulary in the metadata, as llama.cpp's converter writes it, so
    that llm2hef builds tokenizer.json into $TMPDIR."""
    folder = FIXTURES / "gpt2-tiny"
    tok = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    added = {t["id"]: t["content"] for t in tok.get("added_tokens", [])}
    by_id.update(added)
    n = max(by_id) + 1
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(n)]
    types = [3 if i in added else 1 if i in by_id else 5 for i in range(n)]  # CONTROL, NORMAL, UNUSED
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    eos = tokens.index("<|endoftext|>")
    return rewrite(converted("gpt2-tiny"), tmp / "gpt2-vocab.gguf", kv={
        "tokenizer.ggml.model": string("gpt2"), "tokenizer.ggml.pre": string("gpt-2"),
        "tokenizer.ggml.tokens": (tokens, VT.ARRAY, VT.STRING),
        "tokenizer.ggml.token_type": (types, VT.ARRAY, VT.INT32),
        "tokenizer.ggml.merges": (merges, VT.ARRAY, VT.STRING),
        "tokenizer.ggml.eos_token_id": u32(eos), "tokenizer.ggml.bos_token_id": u32(eos)})


def scratch_folders(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith(SCRATCH))


def test_metadata_tokenizer_is_built_in_tmpdir_and_removed(tmp_path, converted):
    model = with_vocabulary(tmp_path, converted)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r = export(model, tmp_path / "out", "--gelu", "tanh", env={"TMPDIR": str(tmpdir)})
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "resources" / "tokenizer.json").is_file() and scratch_folders(tmpdir) == []


F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux


def test_sigterm_removes_the_gguf_scratch_folder(tmp_path, converted):
    """The export's stderr is a pipe filled to the brim beforehand, so its first message (the GGUF notes, written
    once the checkpoint is open and its tokenizer.json built) blocks it with the scratch folder in place: no race."""
    model = with_vocabulary(tmp_path, converted)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r_fd, w_fd = os.pipe()
    fcntl.fcntl(w_fd, F_SETPIPE_SZ, 4096)
    os.set_blocking(w_fd, False)
    try:
        while True:
            os.write(w_fd, b"." * 4096)
    except BlockingIOError:
        pass
    os.set_blocking(w_fd, True)
    p = subprocess.Popen([str(BIN), "export", str(model), "-o", str(tmp_path / "out"), "--cache", "32", "--prefill",
                          "8", "--gelu", "tanh", "--no-progress"], stdout=subprocess.DEVNULL, stderr=w_fd,
                         env={**os.environ, "TMPDIR": str(tmpdir)})
    os.close(w_fd)
    try:
        deadline = time.time() + 20
        while not scratch_folders(tmpdir) and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        assert scratch_folders(tmpdir), "the export never made its scratch folder"
        assert p.poll() is None, "the export did not block on its full stderr"
        p.send_signal(signal.SIGTERM)
        drained = b""
        while chunk := os.read(r_fd, 65536):
            drained += chunk
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(r_fd)
    assert p.returncode == -signal.SIGTERM, drained[-2000:]
    assert scratch_folders(tmpdir) == [] and not (tmp_path / "out").exists()


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


def test_next_run_sweeps_a_killed_runs_scratch_folder_but_not_a_live_one(tmp_path, converted):
    model = with_vocabulary(tmp_path, converted)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    old = time.time() - 3600
    dead, live, fresh = (tmpdir / f"{SCRATCH}DEAD01", tmpdir / f"{SCRATCH}LIVE01", tmpdir / f"{SCRATCH}NEW001")
    for d in (dead, live, fresh):
        d.mkdir()
        (d / "tokenizer.json").write_text("{}")
    for d in (dead, live):
        os.utime(d, (old, old))
    other = tmpdir / "someone-elses-XXXXXX"  # not llm2hef's to judge
    other.mkdir()
    os.utime(other, (old, old))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(live)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    try:
        r = run("inspect", model, env={"TMPDIR": str(tmpdir)})
        assert r.returncode == 0, r.stdout + r.stderr
        assert not dead.exists() and str(dead) in r.stderr
        # Held by a live run; too young to judge; this run's own folder is gone.
        assert scratch_folders(tmpdir) == sorted([live.name, fresh.name]) and other.is_dir()
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("kind", ["missing", "file", "read-only"])
def test_unusable_tmpdir_is_named(tmp_path, converted, kind):
    model = with_vocabulary(tmp_path, converted)
    tmpdir = tmp_path / "tmp"
    if kind == "file":
        tmpdir.write_text("not a folder")
    elif kind == "read-only":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only folder")
        tmpdir.mkdir()
        tmpdir.chmod(0o555)
    env = {"TMPDIR": str(tmpdir)}
    refused(export(model, tmp_path / "out", "--gelu", "tanh", env=env), 3, f"TMPDIR={tmpdir}", out=tmp_path / "out")
    r = run("inspect", model, env=env)
    refused(r, 3, f"TMPDIR={tmpdir}")
    assert "EXPORT WOULD STOP" in r.stdout
