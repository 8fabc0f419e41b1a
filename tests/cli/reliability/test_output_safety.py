"""Outputs never destroy inputs or anything that is not a previous output
(issue 12, data-loss classes 1-3).

Each test builds its own checkpoint copy and files in tmp_path, runs the real
binary, and checks both the exit status and that every pre-existing byte is
still where it was.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm2hef_cli import ADAPTER_DIR, BIN, FIXTURES
from llm2hef_cli import llm2hef as run
from llm2hef_cli import tree_digest as snapshot

FIXTURE = FIXTURES / "gpt2-tiny"


@pytest.fixture()
def workspace(tmp_path):
    """tmp/parent/{ckpt (a copy of gpt2-tiny), notes.txt}."""
    parent = tmp_path / "parent"
    parent.mkdir()
    shutil.copytree(FIXTURE, parent / "ckpt")
    (parent / "notes.txt").write_text("unrelated work")
    return parent


EXPORT = ["--cache", 16, "--prefill", 4]


@pytest.mark.parametrize("target", ["ckpt", ".", "ckpt/inner"], ids=["the-checkpoint", "its-parent", "inside-it"])
def test_export_force_never_removes_its_input(workspace, target):
    ckpt = workspace / "ckpt"
    (ckpt / "inner").mkdir()
    (ckpt / "inner" / "manifest.json").write_text("{}")  # even when it looks like an export
    before = snapshot(workspace)
    r = run("export", ckpt, "-o", workspace / target, *EXPORT, "--force")
    assert r.returncode == 2, r.stderr
    assert "checkpoint" in r.stderr and str(workspace / target).rstrip("/.") in r.stderr
    assert snapshot(workspace) == before


def test_export_force_refuses_a_folder_that_is_not_an_export(workspace, tmp_path):
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_bytes(b"\xff\xd8 not really")
    r = run("export", workspace / "ckpt", "-o", other, *EXPORT, "--force")
    assert r.returncode == 2 and "manifest.json" in r.stderr
    assert (other / "cat.jpg").read_bytes() == b"\xff\xd8 not really"


def test_export_refuses_a_file_as_output(workspace, tmp_path):
    target = tmp_path / "out"
    target.write_text("a file")
    r = run("export", workspace / "ckpt", "-o", target, *EXPORT, "--force")
    assert r.returncode == 2 and "must be a folder" in r.stderr
    assert target.read_text() == "a file"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "tiny"
    r = run("export", FIXTURE, "-o", out, *EXPORT)
    assert r.returncode == 0, r.stderr
    return out


def test_inputs_does_not_overwrite_without_force(exported):
    model = exported / "model.onnx"
    before = model.read_bytes()
    r = run("inputs", exported, "--tokens", "1,2,3", "-o", model)
    assert r.returncode == 2 and "--force" in r.stderr
    assert model.read_bytes() == before


def test_inputs_force_replaces_a_regular_file(exported, tmp_path):
    target = tmp_path / "in.npz"
    target.write_text("old")
    assert run("inputs", exported, "--tokens", "1,2,3", "-o", target, "--force").returncode == 0
    assert target.read_bytes()[:2] == b"PK"  # a zip now


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    return fifo


def test_inputs_force_refuses_a_fifo(exported, tmp_path):
    fifo = _fifo(tmp_path)
    r = run("inputs", exported, "--tokens", "1,2,3", "-o", fifo, "--force")
    assert r.returncode == 2 and "FIFO" in r.stderr
    assert fifo.is_fifo()


def test_inputs_force_refuses_a_folder(exported, tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    r = run("inputs", exported, "--tokens", "1,2,3", "-o", folder, "--force")
    assert r.returncode == 2 and "folder" in r.stderr
    assert folder.is_dir()


@pytest.mark.skipif(os.geteuid() != 0, reason="replacing /dev/null is only possible as root")
def test_inputs_force_never_replaces_a_device_node(exported):
    r = run("inputs", exported, "--tokens", "1,2,3", "-o", "/dev/null", "--force")
    assert r.returncode == 2 and "device" in r.stderr
    assert Path("/dev/null").is_char_device()


def test_registry_manifest_does_not_overwrite_without_force(tmp_path):
    lib = ADAPTER_DIR / "llm2hef_adapter_gpt2.so"
    target = tmp_path / "m.json"
    target.write_text("mine")
    publisher = ["--license", "MIT", "--maintainer", "x"]
    r = run("registry", "manifest", lib, *publisher, "-o", target)
    assert r.returncode == 2 and "--force" in r.stderr and target.read_text() == "mine"
    assert run("registry", "manifest", lib, *publisher, "-o", target, "--force").returncode == 0
    assert target.read_text().lstrip().startswith("{")
    fifo = _fifo(tmp_path)
    r = run("registry", "manifest", lib, *publisher, "-o", fifo, "--force")
    assert r.returncode == 2 and "FIFO" in r.stderr and fifo.is_fifo()


# --- class 3: interrupted runs leave no staging folders --------------------

MAKE_CHECKPOINT = BIN.parent / "tools" / "bench" / "make_random_checkpoint"


def staging_entries(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("." + name + ".tmp-"))


@pytest.fixture(scope="module")
def slow_checkpoint(tmp_path_factory):
    """A GPT-2 checkpoint big enough (~400 MB of F32) that export takes a while."""
    if not MAKE_CHECKPOINT.is_file():
        pytest.skip(f"{MAKE_CHECKPOINT} not built")
    d = tmp_path_factory.mktemp("slow") / "ckpt"
    r = subprocess.run([str(MAKE_CHECKPOINT), "-o", str(d), "--preset", "gpt2", "--n-layer", "4"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return d


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_during_export_removes_the_staging_folder(slow_checkpoint, tmp_path, sig):
    out = tmp_path / "out"
    p = subprocess.Popen([str(BIN), "export", str(slow_checkpoint), "-o", str(out), "--cache", "64", "--prefill", "16",
                          "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not staging_entries(tmp_path, "out") and p.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    if p.poll() is not None:
        pytest.skip("export finished before it could be interrupted")
    p.send_signal(sig)
    p.wait(timeout=60)
    assert p.returncode == -sig  # died of the signal, as a shell expects
    assert staging_entries(tmp_path, "out") == [] and not out.exists()


def _stale(folder: Path, name: str, suffix: str, locked_by=None) -> Path:
    stale = folder / f".{name}.tmp-{suffix}"
    stale.mkdir()
    (stale / "model.onnx.data").write_bytes(b"\0" * 1024)
    old = time.time() - 3600
    os.utime(stale, (old, old))
    return stale


def test_next_run_sweeps_a_dead_runs_staging_folder_but_not_a_live_one(tmp_path):
    dead = _stale(tmp_path, "out", "DEAD01")
    live = _stale(tmp_path, "out", "LIVE01")
    other = _stale(tmp_path, "other", "XXXXXX")  # another target's: not ours to judge
    # A live owner: a process holding the flock, as a running llm2hef does.
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(live)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    try:
        r = run("export", FIXTURE, "-o", tmp_path / "out", *EXPORT)
        assert r.returncode == 0, r.stderr
        assert not dead.exists() and str(dead) in r.stderr
        assert live.is_dir() and other.is_dir()
    finally:
        holder.kill()
        holder.wait()


HOLD_LOCK = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(600)
"""


# --- class 6: sizes from a crafted manifest are checked before allocation ---

@pytest.mark.parametrize("field,value", [(("dims", "heads"), 2**60), (("dims", "hidden"), -3),
                                         (("cache_size",), 2**40), (("pe_tiles", "q"), 0),
                                         (("dims", "vocab"), "many")])
def test_inputs_refuses_crafted_manifest_sizes(exported, tmp_path, field, value):
    import json
    crafted = tmp_path / "exp"
    shutil.copytree(exported, crafted)
    manifest = json.loads((crafted / "manifest.json").read_text())
    node = manifest
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    (crafted / "manifest.json").write_text(json.dumps(manifest))
    r = run("inputs", crafted, "--tokens", "1,2", "-o", tmp_path / "i.npz")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "manifest.json" in r.stderr and field[-1] in r.stderr
    assert not (tmp_path / "i.npz").exists()


def test_gpt2_config_sizes_are_bounded_before_use(tmp_path):
    import json
    ckpt = tmp_path / "g"
    shutil.copytree(FIXTURE, ckpt)
    config = json.loads((ckpt / "config.json").read_text())
    config["n_embd"] = 2**62  # 4 * n_embd overflowed int64 before
    (ckpt / "config.json").write_text(json.dumps(config))
    r = run("inspect", ckpt, "--cache", 16, "--prefill", 4)
    assert r.returncode == 3 and "config.json: field 'n_embd'" in r.stderr


# --- class 12: inputs that are not regular files never block or run away ---

@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_lint_refuses_non_regular_inputs_at_once(tmp_path, kind):
    if kind == "fifo":
        target = _fifo(tmp_path)
    elif kind == "device":
        target = Path("/dev/zero")  # would be read until memory runs out
    else:
        target = tmp_path
    r = subprocess.run([str(BIN), "lint", str(target)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 3 and "regular file" in r.stderr and str(target) in r.stderr


# --- class 8: config values that would write corrupt output are refused ---

LLAMA = FIXTURES / "llama3-tiny"


def _edited(tmp_path: Path, src: Path, filename: str, edit) -> Path:
    import json
    ckpt = tmp_path / "ckpt"
    shutil.copytree(src, ckpt)
    doc = json.loads((ckpt / filename).read_text())
    edit(doc)
    (ckpt / filename).write_text(json.dumps(doc))
    return ckpt


@pytest.mark.parametrize("edit,names", [
    (lambda c: c.update(rope_theta=0), "rope_theta"),
    (lambda c: c.update(rope_theta=-5.0), "rope_theta"),
    (lambda c: c.update(rope_scaling={"rope_type": "linear", "factor": 0}), "factor"),
    (lambda c: c.update(rope_scaling={"rope_type": "llama3", "factor": 8, "low_freq_factor": 4,
                                      "high_freq_factor": 4, "original_max_position_embeddings": 64}),
     "high_freq_factor"),
], ids=["theta-zero", "theta-negative", "linear-factor-zero", "llama3-empty-band"])
def test_rope_values_that_would_write_nan_are_refused(tmp_path, edit, names):
    ckpt = _edited(tmp_path, LLAMA, "config.json", lambda c: (c.pop("rope_parameters", None), edit(c)))
    r = run("export", ckpt, "-o", tmp_path / "out", "--cache", 16, "--prefill", 4)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "config.json" in r.stderr and names in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("eos", [2**40, -5])
def test_eos_outside_the_vocabulary_is_refused(tmp_path, eos):
    ckpt = _edited(tmp_path, FIXTURE, "generation_config.json", lambda g: g.update(eos_token_id=eos))
    r = run("export", ckpt, "-o", tmp_path / "out", *EXPORT)
    assert r.returncode == 3 and "eos token id" in r.stderr and str(eos) in r.stderr


def test_absurd_cache_is_refused_before_any_work(tmp_path):
    r = run("export", FIXTURE, "-o", tmp_path / "out", "--cache", 10**12, "--prefill", 4)
    assert r.returncode == 2 and "32768" in r.stderr


# --- class 5: long strings no longer overflow std::regex ---

def test_long_chat_template_is_handled_linearly(tmp_path):
    import json
    tmpl = "{{" + " " * 30000 + "bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}" + " " * 30000
    ckpt = _edited(tmp_path, LLAMA, "tokenizer_config.json", lambda t: t.update(chat_template=tmpl))
    (ckpt / "chat_template.jinja").unlink(missing_ok=True)
    r = run("export", ckpt, "-o", tmp_path / "out", "--cache", 16, "--prefill", 4)
    assert r.returncode == 0, r.stderr
    written = json.loads((tmp_path / "out" / "resources" / "hailo-config.json").read_text())["chat_template"]
    assert "bos_token" not in written and written.rstrip().endswith("{% endfor %}")


def test_npy_header_with_a_huge_shape_is_refused(exported, tmp_path):
    crafted = tmp_path / "exp"
    shutil.copytree(exported, crafted)
    dims = "1, " * 30000
    header = ("{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }").encode()
    header += b" " * (-(12 + len(header) + 1) % 64) + b"\n"  # format 2.0: 4-byte header length
    (crafted / "resources" / "theta.npy").write_bytes(b"\x93NUMPY\x02\x00" + len(header).to_bytes(4, "little") + header)
    r = run("inputs", crafted, "--tokens", "1,2", "-o", tmp_path / "i.npz")
    assert r.returncode == 3 and "theta.npy" in r.stderr


def test_npy_shape_whose_element_count_wraps_is_refused(exported, tmp_path):
    crafted = tmp_path / "exp"
    shutil.copytree(exported, crafted)
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }"
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    (crafted / "resources" / "theta.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    r = run("inputs", crafted, "--tokens", "1,2", "-o", tmp_path / "i.npz")
    assert r.returncode == 3 and "2^62" in r.stderr


def test_hef_inspect_refuses_a_fifo_at_once(tmp_path):
    fifo = _fifo(tmp_path)
    r = subprocess.run([str(BIN), "hef", "inspect", str(fifo)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 3 and "regular file" in r.stderr


def test_set_config_refuses_a_fifo_config_at_once(tmp_path):
    fifo = _fifo(tmp_path)
    hef = tmp_path / "m.hef"
    hef.write_bytes(b"\x01HEF")  # never read: the config is refused first
    r = subprocess.run([str(BIN), "hef", "set-config", str(hef), str(fifo), "-o", str(tmp_path / "o.hef")],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 3 and "FIFO" in r.stderr


@pytest.mark.parametrize("key,value", [("num_attention_heads", 0), ("vocab_size", -5), ("hidden_size", 2**40),
                                       ("num_key_value_heads", 4), ("intermediate_size", "big")])
def test_llama_family_sizes_are_validated(tmp_path, key, value):
    ckpt = _edited(tmp_path, LLAMA, "config.json", lambda c: c.update({key: value}))
    r = run("inspect", ckpt, "--cache", 16, "--prefill", 4)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "config.json" in r.stderr and ("'" + key + "'") in r.stderr


def test_hidden_not_divisible_by_heads_without_head_dim(tmp_path):
    def edit(c):
        c.pop("head_dim", None)
        c["hidden_size"] = c["num_attention_heads"] * 8 + 1
    ckpt = _edited(tmp_path, LLAMA, "config.json", edit)
    r = run("inspect", ckpt, "--cache", 16, "--prefill", 4)
    assert r.returncode == 3 and "not divisible by num_attention_heads" in r.stderr


def test_a_fifo_config_json_is_refused_at_once(tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(FIXTURE, ckpt)
    (ckpt / "config.json").unlink()
    os.mkfifo(ckpt / "config.json")
    r = subprocess.run([str(BIN), "inspect", str(ckpt), "--cache", "16", "--prefill", "4"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 3 and "config.json" in r.stderr


@pytest.mark.parametrize("src,key,value,tensor", [
    (LLAMA, "head_dim", 48, "q_proj"),                 # exit 5 "cannot broadcast" before
    (LLAMA, "head_dim", 2**24, "q_proj"),              # built constants sized from the config before
    (LLAMA, "intermediate_size", 162, "gate_proj"),    # exported with the wrong size recorded, exit 0, before
    (FIXTURE, "n_inner", 40, "c_fc"),
], ids=["llama-head-dim", "llama-huge-head-dim", "llama-intermediate", "gpt2-n-inner"])
def test_config_that_disagrees_with_the_weights_is_refused_before_building(tmp_path, src, key, value, tensor):
    ckpt = _edited(tmp_path, src, "config.json", lambda c: c.update({key: value}))
    r = subprocess.run([str(BIN), "export", str(ckpt), "-o", str(tmp_path / "out"), "--cache", "16", "--prefill", "4"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert tensor in r.stderr and "expected" in r.stderr and "config.json" in r.stderr
    assert not (tmp_path / "out").exists()


# --- class 8: NaN / Inf weights are reported (warned, or refused on request) ---

_NONFINITE_BYTES = {"F32": {"nan": b"\x00\x00\xc0\x7f", "-inf": b"\x00\x00\x80\xff"},
                    "BF16": {"nan": b"\xc0\x7f", "-inf": b"\x80\xff"},
                    "F16": {"nan": b"\x00\x7e", "-inf": b"\x00\xfc"}}


def _poison(ckpt: Path, tensor: str, flat_index: int, kind: str) -> tuple[str, list[int]]:
    """Overwrites one element of `tensor` (in whichever shard holds it) with NaN or -Inf."""
    import json
    import struct
    for shard in sorted(ckpt.glob("*.safetensors")):
        raw = bytearray(shard.read_bytes())
        (n,) = struct.unpack("<Q", raw[:8])
        header = json.loads(raw[8:8 + n])
        if tensor not in header:
            continue
        entry = header[tensor]
        size = {"F32": 4, "BF16": 2, "F16": 2}[entry["dtype"]]
        at = 8 + n + entry["data_offsets"][0] + flat_index * size
        raw[at:at + size] = _NONFINITE_BYTES[entry["dtype"]][kind]
        shard.write_bytes(bytes(raw))
        shape = entry["shape"]
        index = [flat_index // shape[1], flat_index % shape[1]] if len(shape) == 2 else [flat_index]
        return shard.name, index
    raise AssertionError(f"{tensor} not in {ckpt}")


@pytest.mark.parametrize("fixture,tensor,kind", [
    ("llama3-tiny", "model.layers.1.mlp.down_proj.weight", "nan"),          # F32, read transposed
    ("gpt2-sharded-bf16", "transformer.h.0.attn.c_attn.weight", "-inf"),   # BF16, column slices
    ("gpt2-sharded-bf16", "transformer.wte.weight", "nan"),                 # embeddings.npy and tied head
    ("gpt2-tiny", "transformer.h.1.mlp.c_fc.weight", "-inf"),              # F32, written from the mapping
])
def test_nonfinite_weights_are_warned_and_recorded_or_refused(tmp_path, fixture, tensor, kind):
    import json
    ckpt = tmp_path / "ckpt"
    shutil.copytree(FIXTURES / fixture, ckpt)
    shard, index = _poison(ckpt, tensor, 37, kind)
    value = "NaN" if kind == "nan" else "-Inf"

    r = run("export", ckpt, "-o", tmp_path / "out", *EXPORT)
    assert r.returncode == 0, r.stderr
    assert tensor in r.stderr and value in r.stderr and shard in r.stderr
    recorded = json.loads((tmp_path / "out" / "manifest.json").read_text())["nonfinite_weights"]
    assert [(w["tensor"], w["first_index"], w["value"]) for w in recorded] == [(tensor, index, value)]

    r = run("export", ckpt, "-o", tmp_path / "refused", *EXPORT, "--refuse-nonfinite")
    assert r.returncode == 3, r.stderr
    assert tensor in r.stderr and value in r.stderr and shard in r.stderr
    assert not (tmp_path / "refused").exists()


def test_finite_checkpoint_records_no_nonfinite_weights(tmp_path):
    import json
    r = run("export", FIXTURE, "-o", tmp_path / "out", *EXPORT, "--refuse-nonfinite")
    assert r.returncode == 0, r.stderr
    assert "nonfinite_weights" not in json.loads((tmp_path / "out" / "manifest.json").read_text())


# --- class 3: har fix's spooled arrays never outlive their run ---

def test_har_fix_sweeps_a_dead_runs_npz_scratch_but_not_a_live_one(tmp_path):
    import har_fixtures as hf
    hn, w = hf.parsed_har(vocab=151936, layers=1)  # the lm_head split spools its kernel
    (tmp_path / "in").mkdir()
    har = hf.write_har(tmp_path / "in" / "big.har", "tiny", hn, w)
    outdir = tmp_path / "out"
    outdir.mkdir()
    old = time.time() - 3600
    dead, live, fresh = (outdir / ".llm2hef-npz-DEAD01", outdir / ".llm2hef-npz-LIVE01", outdir / ".llm2hef-npz-NEW001")
    for p in (dead, live, fresh):
        p.write_bytes(b"\0" * 4096)
    for p in (dead, live):
        os.utime(p, (old, old))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(live)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    try:
        r = run("har", "fix", har, "-o", outdir / "fixed.har")
        assert r.returncode == 0, r.stderr
        assert not dead.exists() and str(dead) in r.stderr
        assert live.exists() and fresh.exists()  # held by a live run; too young to judge
        left = sorted(p.name for p in outdir.iterdir())
        assert left == sorted(["fixed.har", live.name, fresh.name]), left  # this run's own spool is gone
    finally:
        holder.kill()
        holder.wait()


# --- class 8: no raw JSON-library errors (exit 5) from wrong types or non-UTF-8 names ---

@pytest.mark.parametrize("filename,edit,names", [
    ("config.json", lambda c: c.update(model_type=7), "model_type"),
    ("tokenizer.json", lambda t: t["added_tokens"][0].update(content=None), "added_tokens"),
    ("tokenizer.json", lambda t: t["added_tokens"][0].update(content=["x"]), "added_tokens"),
], ids=["model-type-number", "added-content-null", "added-content-list"])
def test_wrongly_typed_fields_are_bad_input_naming_the_field(tmp_path, filename, edit, names):
    ckpt = _edited(tmp_path, FIXTURE, filename, edit)
    r = run("export", ckpt, "-o", tmp_path / "out", *EXPORT, "--adapter", "gpt2")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert filename in r.stderr and names in r.stderr and "json.exception" not in r.stderr


def test_a_folder_name_that_is_not_utf8_is_reported_not_crashed_on(tmp_path):
    import json
    ckpt = Path(os.fsdecode(bytes(tmp_path) + b"/ckpt-\xff\xfe"))
    shutil.copytree(FIXTURE, ckpt)
    def run_bytes(*args):  # stdout/stderr echo the name's raw bytes
        return subprocess.run([str(BIN), *map(str, args)], capture_output=True, timeout=300)
    r = run_bytes("export", ckpt, "-o", tmp_path / "out", *EXPORT)
    assert r.returncode == 0, r.stderr
    assert "\ufffd" in json.loads((tmp_path / "out" / "manifest.json").read_text())["model"]["dir"]
    r = run_bytes("inspect", ckpt, *EXPORT, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"].endswith("ckpt-\ufffd\ufffd")


# --- class 12: every input is opened as a regular file, checked on the descriptor ---

def _run_quick(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=20)


def test_inputs_refuses_a_fifo_resource_at_once(exported, tmp_path):
    crafted = tmp_path / "exp"
    shutil.copytree(exported, crafted)
    (crafted / "resources" / "theta.npy").unlink()
    os.mkfifo(crafted / "resources" / "theta.npy")
    r = _run_quick("inputs", crafted, "--tokens", "1,2", "-o", tmp_path / "i.npz")
    assert r.returncode == 3 and "theta.npy" in r.stderr and "FIFO" in r.stderr


@pytest.mark.parametrize("cmd", [["har", "inspect"], ["har", "fix"]])
def test_har_commands_refuse_a_fifo_at_once(tmp_path, cmd):
    fifo = _fifo(tmp_path)
    r = _run_quick(*cmd, fifo, *(["-o", tmp_path / "o.har"] if cmd[1] == "fix" else []))
    assert r.returncode == 3 and "FIFO" in r.stderr


def test_export_refuses_a_fifo_chat_template_at_once(tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(LLAMA, ckpt)
    (ckpt / "chat_template.jinja").unlink(missing_ok=True)
    os.mkfifo(ckpt / "chat_template.jinja")
    r = _run_quick("export", ckpt, "-o", tmp_path / "out", *EXPORT)
    assert r.returncode == 3 and "chat_template.jinja" in r.stderr and "FIFO" in r.stderr
    assert not (tmp_path / "out").exists()


# --- issue 30, item 17: a SIGKILLed export's staging is swept by the very next run ---

def test_next_run_sweeps_a_dead_runs_staging_however_recent(tmp_path):
    """A staging folder is locked before it gets its .tmp- name, so one nobody holds is a dead run's even when it
    is seconds old (the next export after a SIGKILL runs straight away)."""
    dead = tmp_path / ".out.tmp-DEAD02"
    dead.mkdir()
    (dead / "model.onnx.data").write_bytes(b"\0" * 1024)  # as fresh as a run killed a moment ago
    r = run("export", FIXTURE, "-o", tmp_path / "out", *EXPORT)
    assert r.returncode == 0, r.stderr
    assert not dead.exists() and str(dead) in r.stderr
    assert staging_entries(tmp_path, "out") == []


def test_sigkill_then_rerun_leaves_no_staging(slow_checkpoint, tmp_path):
    out = tmp_path / "out"
    args = [str(BIN), "export", str(slow_checkpoint), "-o", str(out),
            "--cache", "64", "--prefill", "16", "--no-progress"]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not staging_entries(tmp_path, "out") and p.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    if p.poll() is not None:
        pytest.skip("export finished before it could be killed")
    p.kill()
    p.wait(timeout=60)
    assert staging_entries(tmp_path, "out")  # SIGKILL cannot clean up: the next run must
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert staging_entries(tmp_path, "out") == [] and out.is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []


def _small_file_limit():
    """Writes past 4 KiB fail with EFBIG (SIGXFSZ ignored, inherited through exec): a disk that fills up."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_failed_write_names_the_output_not_its_vanished_staging(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([str(BIN), "export", str(FIXTURE), "-o", str(out), *map(str, EXPORT)], capture_output=True,
                       text=True, timeout=300, preexec_fn=_small_file_limit)
    assert r.returncode == 3, r.stderr
    assert ".tmp-" not in r.stderr, r.stderr  # that file is gone by the time anyone reads this
    assert f"{out}/" in r.stderr and "nothing of the new output was kept" in r.stderr
    assert staging_entries(tmp_path, "out") == [] and not out.exists()
