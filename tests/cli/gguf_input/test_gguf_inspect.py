"""GGUF checkpoints a newcomer brings to `inspect` (issue 40, part 3): a type
export cannot read stops inspect as it stops export, naming the file to get
instead; the network's name comes from the GGUF metadata, not the file name;
and inspect says whether the chat template came from the folder or from the
GGUF's metadata key."""
from __future__ import annotations

import json
import shutil
import struct
import sys

import pytest

from llm2hef_cli import FIXTURES, REPO
from llm2hef_cli import llm2hef as run


def gguf_bytes(kvs, tensors, data: bytes, align: int = 32) -> bytes:
    """A GGUF v3 file field by field (docs/gguf.md)."""
    def s(x: str) -> bytes:
        return struct.pack("<Q", len(x.encode())) + x.encode()
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + v
    for n, ne, t, off in tensors:
        out += s(n) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, off)
    return out + b"\0" * (-len(out) % align) + data


def gguf_string(x: str) -> bytes:
    return struct.pack("<Q", len(x.encode())) + x.encode()


def test_inspect_stops_on_an_undequantized_gguf_as_export_does_and_names_the_file_to_get(tmp_path):
    kvs = [("general.architecture", 8, gguf_string("llama")), ("llama.block_count", 4, struct.pack("<I", 1)),
           ("llama.embedding_length", 4, struct.pack("<I", 32)),
           ("llama.attention.head_count", 4, struct.pack("<I", 2))]
    # IQ4_NL (ggml type 20): 32 values in 18 bytes; 256 values here.
    path = tmp_path / "model-IQ4_NL.gguf"
    path.write_bytes(gguf_bytes(kvs, [("token_embd.weight", [32, 8], 20, 0)], b"\0" * 160))
    inspect = run("inspect", path)
    export = run("export", path, "-o", tmp_path / "out")
    assert inspect.returncode == export.returncode == 4, (inspect.stdout, inspect.stderr, export.stderr)
    assert inspect.stderr == export.stderr  # the same refusal, from the same place
    assert "IQ4_NL" in inspect.stderr and "fits" not in inspect.stdout
    # Which file to get, not only which types are read (that list names F16 too).
    assert "as an F16 or BF16 GGUF" in inspect.stderr and "a Q8_0 GGUF" in inspect.stderr, inspect.stderr
    assert not (tmp_path / "out").exists()


def test_gguf_network_name_comes_from_its_metadata_not_its_file_name(tmp_path):
    gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
    del gguf
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules["make_gguf_fixtures"] = fx
    spec.loader.exec_module(fx)
    made = tmp_path / "made"
    path = fx.convert(FIXTURES / "qwen3-tiny", made, "Q4_1")  # general.name "qwen3-tiny"
    folder = tmp_path / "Qwen3-Tiny-GGUF"
    folder.mkdir()
    renamed = folder / "Qwen3-Tiny-Q4_1.gguf"
    shutil.move(str(path), renamed)
    for t in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "qwen3-tiny" / t, folder / t)
    out = tmp_path / "out"
    r = run("export", folder, "-o", out, "--cache", 32, "--prefill", 8, "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["model"]["name"] == "qwen3-tiny"
    assert all("q4_1" not in g for g in manifest["dfc"]["network_groups"]), manifest["dfc"]
    # The file alone (no tokenizer: inspect says export would stop) is named the same.
    assert json.loads(run("inspect", renamed, "--cache", 32, "--json").stdout)["name"] == "qwen3-tiny"

    # general.basename with its size label and fine-tune wins over general.name.
    writer = fx.gguf.GGUFWriter

    class WithBasename(writer):
        def write_header_to_file(self, *args, **kwargs):
            self.add_string("general.basename", "Qwen3")
            self.add_string("general.size_label", "0.6B")
            self.add_string("general.finetune", "Instruct")
            return super().write_header_to_file(*args, **kwargs)

    fx.gguf.GGUFWriter = WithBasename
    try:
        path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "basename", "Q8_0")
    finally:
        fx.gguf.GGUFWriter = writer
    js = json.loads(run("inspect", path, "--cache", 32, "--json").stdout)
    assert js["name"] == "Qwen3-0.6B-Instruct", js["name"]


def test_inspect_says_where_a_ggufs_chat_template_came_from(tmp_path):
    pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules["make_gguf_fixtures"] = fx
    spec.loader.exec_module(fx)
    path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "made", "F16")
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    shutil.copy(FIXTURES / "qwen3-tiny" / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(FIXTURES / "qwen3-tiny" / "tokenizer_config.json", folder / "tokenizer_config.json")
    beside = json.loads(run("inspect", folder, "--cache", 32, "--json").stdout)["resources"]
    assert "the folder's file, not the GGUF metadata" in beside["chat_template_source"], beside

    # A GGUF carrying its tokenizer and template (as llama.cpp's converter
    # writes them, test_gguf_tokenizer.add_vocabulary): named by its key.
    from test_gguf_tokenizer import add_vocabulary
    vocab = json.loads((FIXTURES / "qwen3-tiny" / "config.json").read_text())["vocab_size"]
    writer = fx.gguf.GGUFWriter

    class WithVocabulary(writer):
        def write_header_to_file(self, *args, **kwargs):
            add_vocabulary(self, FIXTURES / "qwen3-tiny", "qwen2", vocab)
            return super().write_header_to_file(*args, **kwargs)

    fx.gguf.GGUFWriter = WithVocabulary
    try:
        path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "with-vocabulary", "F16")
    finally:
        fx.gguf.GGUFWriter = writer
    r = run("inspect", path, "--cache", 32, "--json")
    assert r.returncode == 0, r.stderr
    source = json.loads(r.stdout)["resources"]["chat_template_source"]
    assert source == f"the GGUF metadata of {path} (key tokenizer.chat_template)", source
