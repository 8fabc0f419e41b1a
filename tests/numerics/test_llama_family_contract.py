"""Graph and packaging contract of the Llama-family exports: I/O, manifest,
resources (theta = HF's inv_freq twice, embeddings, hailo-config), lm_head
sharding, and the runtime layout of `llm2hef inputs`."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import (
    FIXTURES,
    INPUT_NAMES,
    LLAMA_CACHES,
    fixture_info,
    llama_combo_id,
    llama_combos,
    llama_generation_config,
    reference,
)
from numerics_checks import (
    SUFFIX_ROLES,
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos()]
ONE_CACHE = [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos() if c[1] == LLAMA_CACHES[0]]
LM_HEAD_MAX = 40000


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def expected_shards(vocab: int) -> list[int]:
    return [vocab] if vocab <= LM_HEAD_MAX else {40960: [20480, 20480]}[vocab]


def hailo_config(ex) -> dict:
    return json.loads((ex.out / "resources" / "hailo-config.json").read_text())


@pytest.mark.parametrize("combo", COMBOS)
def test_onnx_checker_full(combo, exports):
    check_onnx_full(exports.get(*combo))


@pytest.mark.parametrize("combo", COMBOS)
def test_io_names_order_shapes(combo, exports):
    import onnx
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    ex = exports.get(*combo)
    m = onnx.load(str(ex.out / "model.onnx"), load_external_data=False)
    H, V, heads, T = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"], cfg["head_dim"]
    want = {"inputs_embeds": [1, N, H], "attention_mask": [1, 1, N, heads * N],
            **{k: [1, N, T] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, V)
    assert_inputs_consumed(m, subgraphs=False)
    assert_static_shapes(m)


@pytest.mark.parametrize("combo", COMBOS)
def test_manifest(combo, exports):
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    ex = exports.get(*combo)
    man = ex.manifest
    assert man["cache_size"] == N and man["prefill"] == ex.prefill
    d = man["dims"]
    got = (d["hidden"], d["layers"], d["vocab"], d["heads"], d["kv_heads"], d["head_dim"])
    want = (cfg["hidden_size"], cfg["num_hidden_layers"], cfg["vocab_size"], cfg["num_attention_heads"],
            cfg["num_key_value_heads"], cfg["head_dim"])
    assert got == want, (got, want)
    assert man["theta_length"] == cfg["head_dim"]
    assert man["pe_tiles"] == {"q": cfg["num_attention_heads"], "k": cfg["num_key_value_heads"]}, man["pe_tiles"]
    assert man["lm_head_shards"] == expected_shards(cfg["vocab_size"]), man["lm_head_shards"]
    assert sum(man["lm_head_shards"]) == cfg["vocab_size"]
    assert [i["name"] for i in man["inputs"]] == INPUT_NAMES
    shapes = {i["name"]: list(i["shape"]) for i in man["inputs"]}
    assert shapes["attention_mask"] == [1, 1, N, cfg["num_attention_heads"] * N]
    for n in INPUT_NAMES[2:]:
        assert shapes[n] == [1, N, cfg["head_dim"]], (n, shapes[n])
    for f in ["model.onnx.data", "resources/tokenizer.json", "resources/embeddings.npy",
              "resources/theta.npy", "resources/hailo-config.json"]:
        assert (ex.out / f).is_file() and (ex.out / f).stat().st_size > 0, f


@pytest.mark.parametrize("combo", COMBOS)
def test_theta_is_hf_inv_freq_twice(combo, exports, report):
    fixture, N, _ = combo
    ex = exports.get(*combo)
    theta = np.load(ex.out / "resources" / "theta.npy")
    inv = np.asarray(fixture_info(fixture)["rotary_emb_inv_freq"], np.float32)
    want = np.concatenate([inv, inv])
    assert theta.dtype == np.float32 and theta.shape == want.shape, (theta.dtype, theta.shape)
    assert np.all(theta > 0)
    ulps = np.abs(theta.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1, (f"theta differs from HF's inv_freq by up to {int(ulps.max())} ulp; "
                             f"theta {theta.tolist()} vs {want.tolist()}")


@pytest.mark.parametrize("combo", COMBOS)
def test_embeddings_resource(combo, exports, checkpoints):
    fixture, _, _ = combo
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    wte = checkpoints(fixture)["model.embed_tokens.weight"]
    assert emb.dtype == np.float32 and emb.shape == wte.shape, (emb.dtype, emb.shape, wte.shape)
    assert np.array_equal(emb, wte), f"max |diff| {np.abs(emb - wte).max()}"


@pytest.mark.parametrize("combo", COMBOS)
def test_hailo_config(combo, exports):
    fixture, N, _ = combo
    info = fixture_info(fixture)
    cfg = info["config"]
    ex = exports.get(*combo)
    hc = hailo_config(ex)
    gen = llama_generation_config(fixture)
    eos = gen["eos_token_id"] if isinstance(gen["eos_token_id"], list) else [gen["eos_token_id"]]
    assert eos == info["eos_token_ids"]
    assert hc["eos_token_id"] == eos[0], (hc["eos_token_id"], eos)
    assert list(hc["stop_token_id"]) == eos, (hc["stop_token_id"], eos)
    if fixture == "llama3-tiny":
        assert len(hc["stop_token_id"]) == 3
    pp = hc["pre_process_params"]
    assert pp["kv_cache_size"] == N and pp["prefill_input_tokens_count"] == ex.prefill
    assert pp["num_attention_heads"] == cfg["num_attention_heads"]
    assert pp["num_key_value_heads"] == cfg["num_key_value_heads"]
    suffixes = hc["input_layers_names_suffixes"]
    for i, role in enumerate(SUFFIX_ROLES):
        assert str(suffixes[role]).endswith(f"input_layer{i + 1}"), (role, suffixes[role])
    # Chat template carried over (the literal BOS text may replace {{ bos_token }}
    # or be prepended when the tokenizer's post-processor added it).
    tc = json.loads((FIXTURES / fixture / "tokenizer_config.json").read_text())
    jinja = FIXTURES / fixture / "chat_template.jinja"  # transformers >= 4.43 saves it there first
    if jinja.is_file():
        tc["chat_template"] = jinja.read_text()
    assert isinstance(hc.get("chat_template"), str) and hc["chat_template"]
    if "chat_template" in tc:
        tmpl = tc["chat_template"]
        bos = tc.get("bos_token") if info["tokenizer"]["bos_prepended_by_post_processor"] else None
        if bos:
            # Printed as a Jinja string literal in front (issue 41, item 6); the fixtures' BOS texts hold no quote.
            tmpl = "{{ '" + bos + "' }}" + tmpl.replace("{{ bos_token }}", "")
        manifest = json.loads((ex.out / "manifest.json").read_text())
        older_minja = [c for c in manifest["resource_changes"] if "hailo-ollama's older minja" in c]
        if not older_minja:
            assert hc["chat_template"] == tmpl, (hc["chat_template"], tmpl)
        else:  # rewritten for hailo-ollama (issue 37): the same text as the original, rendered by jinja2
            assert renders_alike(hc["chat_template"], tmpl), older_minja
    specials = info["tokenizer"]["special_tokens"]
    if "<think>" in specials:
        assert hc.get("begin_of_reasoning_token_id") == specials["<think>"]
        assert hc.get("end_of_reasoning_token_id") == specials["</think>"]
    tok = json.loads((ex.out / "resources" / "tokenizer.json").read_text())
    added = {t["content"]: t["id"] for t in tok["added_tokens"]}
    for text, i in specials.items():
        assert added.get(text) == i, (text, added.get(text), i)


def renders_alike(stored: str, original: str) -> bool:
    """Both templates give one text for a few conversations, as transformers renders them."""
    import jinja2
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    conversations = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
         {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Why?"}],
    ]
    for messages in conversations:
        for prompt in (False, True):
            texts = {env.from_string(t).render(messages=messages, add_generation_prompt=prompt, bos_token="",
                                               eos_token="") for t in (stored, original)}
            if len(texts) != 1:
                return False
    return True


@pytest.mark.parametrize("combo", ONE_CACHE)
def test_external_data(combo, exports, checkpoints):
    import onnx
    from onnx.external_data_helper import uses_external_data
    fixture, _, _ = combo
    ex = exports.get(*combo)
    m = onnx.load(str(ex.out / "model.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        if not uses_external_data(t):
            assert t.ByteSize() <= 64 * 1024, f"initializer {t.name} ({t.ByteSize()} bytes) is inline"
    ckpt = checkpoints(fixture)
    weights = sum(v.size * 4 for k, v in ckpt.items() if k != "model.embed_tokens.weight")
    assert (ex.out / "model.onnx.data").stat().st_size >= 0.95 * weights


@pytest.mark.parametrize("combo", [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos()
                                   if c[1] == LLAMA_CACHES[1]])
def test_inputs_match_runtime_layout(combo, exports, tmp_path):
    """`llm2hef inputs`: prompt bottom-aligned, head-tiled 0/-100 mask, cos/sin of
    theta * position for q and k."""
    fixture, N, _ = combo
    cfg = cfg_of(fixture)
    heads = cfg["num_attention_heads"]
    ex = exports.get(*combo)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    refs = reference(fixture)
    for n in sorted({1, 3, N // 2 + 1, N}):
        tokens = refs[max(L for L in refs if L >= n)][0][:n]
        f = ex.inputs(tokens, tmp_path)
        for k in INPUT_NAMES:
            assert f[k].dtype == np.float32, (k, f[k].dtype)
        assert_runtime_layout(f, emb, theta, tokens, N, heads)
