"""GGUF vocabularies the metadata cannot rebuild, through the real `llm2hef export` (issue 37, part 3).

Each .gguf holds the weights of the llama3-tiny fixture (make_gguf_fixtures.py)
and a vocabulary written the way llama.cpp's converter writes it in that case.
The refusal must name the file and the key, say what works instead, and write
nothing; and what it says must work: the same .gguf in a folder with the
model's tokenizer.json exports.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
SPM_TINY = FIXTURES / "gguf-tokenizer" / "spm-tiny" / "metadata.json"
ADVICE = "in a folder with the .gguf and give llm2hef that folder"

_spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
fx = importlib.util.module_from_spec(_spec)
sys.modules["make_gguf_fixtures"] = fx
_spec.loader.exec_module(fx)

# gguf-py constants.py TokenType
NORMAL, CONTROL, BYTE = 1, 3, 6


def export(src: Path, out: Path):
    return subprocess.run([str(BIN), "export", str(src), "-o", str(out), "--cache", "32", "--prefill", "8"],
                          capture_output=True, text=True, timeout=300)


def llama_gguf(tmp: Path, add_vocabulary) -> Path:
    """llama3-tiny as a .gguf alone in a folder, with the tokenizer.* keys `add_vocabulary(writer)` writes."""
    class WriterWithVocabulary(gguf.GGUFWriter):
        def write_header_to_file(self, *args, **kwargs):
            add_vocabulary(self)
            return super().write_header_to_file(*args, **kwargs)

    real = fx.gguf.GGUFWriter
    fx.gguf.GGUFWriter = WriterWithVocabulary
    try:
        made = fx.convert(FIXTURES / "llama3-tiny", tmp / "made", "F32")
    finally:
        fx.gguf.GGUFWriter = real
    bare = tmp / "bare"
    bare.mkdir()
    return Path(shutil.move(str(made), bare / made.name))


def refused_then_folder_works(tmp: Path, path: Path, *needles: str) -> None:
    out = tmp / "out"
    r = export(path, out)
    assert r.returncode == 3, r.stderr
    for n in (str(path), ADVICE, *needles):
        assert n in r.stderr, (n, r.stderr)
    assert not out.exists()
    # The advice: the same .gguf beside the model's own tokenizer files, the folder given.
    folder = tmp / "with-tokenizer"
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "llama3-tiny" / f, folder / f)
    r = export(folder, tmp / "out2")
    assert r.returncode == 0, r.stderr
    assert "the folder's file, not the GGUF metadata" in r.stderr


def test_sentencepiece_scores_without_order_are_refused(tmp_path):
    """convert_hf_to_gguf.py LlamaModel.set_vocab falls back to _set_vocab_llama_hf
    when the HF folder has a SentencePiece-style tokenizer.json but no
    tokenizer.model: gguf-py's LlamaHfVocab gives every piece the score -1000
    (get_token_score, "Default score"), types BYTE for <0xNN>, CONTROL for the
    special ids and NORMAL otherwise, tokenizer.ggml.pre "default" and no merges.
    The pieces here are the first 320 of spm-tiny's (a SentencePiece BPE trained
    with Llama's settings), to fit the fixture's 320-row embedding. With real
    scores they encode as SentencePiece does (test_gguf_tokenizer.py); without,
    merges recovered by length alone would not."""
    md = json.loads(SPM_TINY.read_text(encoding="utf-8"))
    tokens = md["tokenizer.ggml.tokens"][:320]
    special = {md["tokenizer.ggml.unknown_token_id"], md["tokenizer.ggml.bos_token_id"],
               md["tokenizer.ggml.eos_token_id"]}

    def add_vocabulary(w):
        w.add_tokenizer_model("llama")
        w.add_tokenizer_pre("default")
        w.add_token_list(tokens)
        w.add_token_scores([-1000.0] * len(tokens))
        w.add_token_types([BYTE if t.startswith("<0x") and len(t) == 6 else CONTROL if i in special else NORMAL
                           for i, t in enumerate(tokens)])
        w.add_unk_token_id(md["tokenizer.ggml.unknown_token_id"])
        w.add_add_bos_token(True)

    path = llama_gguf(tmp_path, add_vocabulary)
    refused_then_folder_works(tmp_path, path, "metadata key 'tokenizer.ggml.scores'", "score -1000",
                              "no tokenizer.model")


def test_byte_level_vocabulary_without_merges_says_what_to_do(tmp_path):
    """A byte-level vocabulary with no tokenizer.ggml.merges (llama.cpp refuses
    to load one too: "cannot find tokenizer merges in model file"): the refusal
    names the key and says what to do instead."""
    tok = json.loads((FIXTURES / "llama3-tiny" / "tokenizer.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    by_id.update({t["id"]: t["content"] for t in tok["added_tokens"]})

    def add_vocabulary(w):
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("llama-bpe")
        w.add_token_list([by_id.get(i, f"[PAD{i}]") for i in range(320)])
        w.add_token_types([NORMAL] * 320)

    path = llama_gguf(tmp_path, add_vocabulary)
    refused_then_folder_works(tmp_path, path, "metadata key 'tokenizer.ggml.merges': missing")
