"""Graph and packaging contract, for every family of the family table
(docs/lint.md "The graph contract", hailo-contract.md sections 2, 6 and 9): the
six runtime inputs and the one output with static shapes, the onnx checker,
lint clean, the manifest's dimensions, theta (HF's inv_freq, or the exact
Fourier frequencies of learned positions), the resources (embeddings,
hailo-config.json, tokenizer.json, chat template), weights in
model.onnx.data, and the runtime layout of `llm2hef inputs`.

Every expectation comes from the fixture (its fixture.json, config.json and
checkpoint), whatever spelling its family uses: what only one family has is
in families/."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from conftest import (
    FIXTURES,
    INPUT_NAMES,
    config_dims,
    contract_runs,
    fixture_info,
    load_graph,
    params,
    reference,
    run_llm2hef,
)
from numerics_checks import (
    SUFFIX_ROLES,
    assert_graph_io,
    assert_inputs_consumed,
    assert_runtime_layout,
    assert_static_shapes,
    check_onnx_full,
)

RUNS = params(contract_runs())
# The layout of `llm2hef inputs` does not depend on the options: the first one per fixture and cache.
LAYOUT_RUNS = params(r for r in contract_runs() if r.option == r.family.numerics.options[0])
LM_HEAD_MAX = 40000  # the widest lm_head MatMul the export writes (hailo-contract.md section 6)
EXPORT_FILES = ["model.onnx.data", "optimize.alls", "compile.alls", "compile.py", "resources/tokenizer.json",
                "resources/embeddings.npy", "resources/theta.npy", "resources/hailo-config.json"]
# Checkpoint tensors that are the token embedding table, in the families' spellings.
EMBEDDING_SUFFIXES = ("wte.weight", "embed_tokens.weight", "embed_in.weight")
# Learned position tables: the export replaces them by exact Fourier features of the pe tables.
POSITION_SUFFIXES = ("wpe.weight", "embed_positions.weight")
# A separate lm_head: the embedding table is then a resource only, not a graph weight.
LM_HEAD_TENSORS = ("lm_head.weight", "embed_out.weight")


def embedding_tensor(ckpt: dict) -> str:
    names = [k for k in ckpt if k.endswith(EMBEDDING_SUFFIXES)]
    assert len(names) == 1, f"not one embedding table in the checkpoint: {names}"
    return names[0]


def has_learned_positions(ckpt: dict) -> bool:
    return any(k.endswith(POSITION_SUFFIXES) for k in ckpt)


def expected_theta(fixture: str, cache: int, ckpt: dict) -> np.ndarray:
    """What resources/theta.npy must hold:
    - learned positions (GPT-2, OPT): 2 pi k / cache for k = 0..cache/2, padded to an even length;
    - RoPE bases per layer type (Gemma 2/3, OLMo 2): each distinct inv_freq twice, the
      sliding layers' base first;
    - else HF's inv_freq twice, then zeros up to head_dim (partial rotary)."""
    info = fixture_info(fixture)
    if has_learned_positions(ckpt):
        k = np.arange(cache // 2 + 1)
        want = (2 * math.pi * k / cache).astype(np.float32)
        return np.concatenate([want, np.zeros(len(want) % 2, np.float32)])
    if "rotary_emb_inv_freq_by_layer_type" in info:
        types = info["config"]["layer_types"]
        inv = {t: np.asarray(v, np.float32) for t, v in info["rotary_emb_inv_freq_by_layer_type"].items()}
        bases = []
        for t in ["sliding_attention", "full_attention"]:
            if t in types and not any(np.array_equal(inv[t], b) for b in bases):
                bases.append(inv[t])
        return np.concatenate([np.concatenate([b, b]) for b in bases])
    inv = np.asarray(info["rotary_emb_inv_freq"], np.float32)
    rotary = 2 * inv.size
    return np.concatenate([inv, inv, np.zeros(config_dims(fixture)["head_dim"] - rotary, np.float32)])


def expected_shards(vocab: int) -> list[int]:
    return [vocab] if vocab <= LM_HEAD_MAX else {40960: [20480, 20480]}[vocab]


def eos_ids(fixture: str) -> list[int]:
    info = fixture_info(fixture)
    return info["eos_token_ids"] if "eos_token_ids" in info else [info["eos_token_id"]]


@pytest.mark.parametrize("run", RUNS)
def test_onnx_checker_full(run, exports):
    check_onnx_full(exports.get(*run))


@pytest.mark.parametrize("run", RUNS)
def test_io_names_order_shapes(run, exports, checkpoints):
    import onnx
    d = config_dims(run.fixture)
    N = run.cache
    m = load_graph(exports.get(*run))
    T = expected_theta(run.fixture, N, checkpoints(run.fixture)).size
    assert T % 2 == 0 and T > 0, T
    want = {"inputs_embeds": [1, N, d["hidden"]], "attention_mask": [1, 1, N, d["heads"] * N],
            **{k: [1, N, T] for k in INPUT_NAMES[2:]}}
    assert_graph_io(m, want, d["vocab"])
    assert m.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    # Every input is consumed by at least one node (inside subgraphs too, should there be any).
    assert_inputs_consumed(m, subgraphs=True)
    # Static shapes all the way: shape inference finds no symbolic dimension.
    assert_static_shapes(m)


@pytest.mark.parametrize("run", RUNS)
def test_manifest(run, exports, checkpoints):
    d = config_dims(run.fixture)
    N = run.cache
    ex = exports.get(*run)
    man = ex.manifest
    assert man["cache_size"] == N and man["prefill"] == ex.prefill
    assert [i["name"] for i in man["inputs"]] == INPUT_NAMES
    assert all("role" in i and "shape" in i for i in man["inputs"])
    T = expected_theta(run.fixture, N, checkpoints(run.fixture)).size
    shapes = {i["name"]: list(i["shape"]) for i in man["inputs"]}
    assert shapes["inputs_embeds"] == [1, N, d["hidden"]]
    assert shapes["attention_mask"] == [1, 1, N, d["heads"] * N]
    for n in INPUT_NAMES[2:]:
        assert shapes[n] == [1, N, T], (n, shapes[n])
    assert [(o["name"], list(o["shape"])) for o in man["outputs"]] == [("logits", [1, 1, d["vocab"]])]
    assert man["dims"] == d, (man["dims"], d)
    assert man["theta_length"] == T
    assert man["pe_tiles"] == {"q": d["heads"], "k": d["kv_heads"]}, man["pe_tiles"]
    assert man["lm_head_shards"] == expected_shards(d["vocab"]), man["lm_head_shards"]
    for f in EXPORT_FILES:
        assert (ex.out / f).is_file() and (ex.out / f).stat().st_size > 0, f


@pytest.mark.parametrize("run", RUNS)
def test_theta(run, exports, checkpoints):
    theta = np.load(exports.get(*run).out / "resources" / "theta.npy")
    want = expected_theta(run.fixture, run.cache, checkpoints(run.fixture))
    assert theta.dtype == np.float32 and theta.shape == want.shape, (theta.dtype, theta.shape, want.shape)
    assert theta.size % 2 == 0, "the runtime fills two sections of T/2 columns: T must be even"
    assert np.all(np.isfinite(theta))
    # Unrotated dimensions (partial rotary, the padding column) are exactly 0: cos 1 and sin 0.
    assert np.array_equal(theta[want == 0], want[want == 0]), theta.tolist()
    ulps = np.abs(theta.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps.max() <= 1, f"theta differs from {want.tolist()} by up to {int(ulps.max())} ulp: {theta.tolist()}"


@pytest.mark.parametrize("run", RUNS)
def test_embeddings_resource(run, exports, checkpoints):
    """The checkpoint's table, unscaled (a family's embedding scale is in the graph)."""
    emb = np.load(exports.get(*run).out / "resources" / "embeddings.npy")
    ckpt = checkpoints(run.fixture)
    table = ckpt[embedding_tensor(ckpt)]
    assert emb.dtype == np.float32 and emb.shape == table.shape, (emb.dtype, emb.shape, table.shape)
    assert np.array_equal(emb, table), f"max |diff| {np.abs(emb - table).max()}"


@pytest.mark.parametrize("run", RUNS)
def test_external_data(run, exports, checkpoints):
    """Every weight lives in model.onnx.data; only small constants stay inline."""
    from onnx.external_data_helper import uses_external_data
    ex = exports.get(*run)
    onnx_path, data_path = ex.out / "model.onnx", ex.out / "model.onnx.data"
    locations = set()
    for t in load_graph(ex).graph.initializer:
        if uses_external_data(t):
            locations.add({e.key: e.value for e in t.external_data}["location"])
        else:
            assert t.ByteSize() <= 64 * 1024, f"initializer {t.name} ({t.ByteSize()} bytes) is inline"
    assert locations == {"model.onnx.data"}, locations
    ckpt = checkpoints(run.fixture)
    resource_only = {k for k in ckpt if k.endswith(POSITION_SUFFIXES)}
    if any(k.endswith(LM_HEAD_TENSORS) for k in ckpt):
        resource_only.add(embedding_tensor(ckpt))
    weights = sum(v.size * 4 for k, v in ckpt.items() if k not in resource_only)
    data_size = data_path.stat().st_size
    assert data_size >= 0.95 * weights, (data_size, weights)
    assert onnx_path.stat().st_size < data_size / 2, (onnx_path.stat().st_size, data_size)


@pytest.mark.parametrize("run", RUNS)
def test_lint_clean(run, exports):
    proc = run_llm2hef(["lint", exports.get(*run).out / "model.onnx", "--json"], check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["errors"] == 0, report
    # The one warning every export has (the rank-4 mask needs net_input_format,
    # which compile.py passes); nothing specific to a family, no unknown op.
    others = [f for f in report["findings"] if f["severity"] != "info" and f["rule"] != "input-format"]
    assert not others, others


@pytest.mark.parametrize("run", RUNS)
def test_hailo_config(run, exports):
    info = fixture_info(run.fixture)
    d = config_dims(run.fixture)
    ex = exports.get(*run)
    hc = json.loads((ex.out / "resources" / "hailo-config.json").read_text())
    eos = eos_ids(run.fixture)
    assert hc["eos_token_id"] == eos[0], (hc["eos_token_id"], eos)
    assert list(hc["stop_token_id"]) == eos, (hc["stop_token_id"], eos)
    pp = hc["pre_process_params"]
    assert pp["kv_cache_size"] == run.cache and pp["prefill_input_tokens_count"] == ex.prefill
    assert "prefill_input_tokens_size" not in pp  # silently ignored by the runtime
    assert pp["num_attention_heads"] == d["heads"]
    assert pp.get("num_key_value_heads", d["heads"]) == d["kv_heads"]
    suffixes = hc["input_layers_names_suffixes"]
    assert set(SUFFIX_ROLES) <= set(suffixes), suffixes
    values = [suffixes[r] for r in SUFFIX_ROLES]
    assert len(set(values)) == len(values), f"two roles share a suffix: {suffixes}"
    # The DFC names inputs input_layer1..6 in ONNX input order,
    # so each role must name the layer of its ONNX input (embeddings = inputs_embeds).
    for i, role in enumerate(SUFFIX_ROLES):
        assert str(suffixes[role]).endswith(f"input_layer{i + 1}"), (role, suffixes[role])
    tok = json.loads((ex.out / "resources" / "tokenizer.json").read_text())
    added = {t["content"]: t["id"] for t in tok["added_tokens"]}
    assert eos[0] in added.values(), (eos, added)
    specials = info.get("tokenizer", {}).get("special_tokens", {})
    for text, i in specials.items():
        assert added.get(text) == i, (text, added.get(text), i)
    if "<think>" in specials:
        assert hc.get("begin_of_reasoning_token_id") == specials["<think>"]
        assert hc.get("end_of_reasoning_token_id") == specials["</think>"]


@pytest.mark.parametrize("run", RUNS)
def test_chat_template_carried_over(run, exports):
    """The checkpoint's chat template, in hailo-config.json (the literal BOS text may
    replace {{ bos_token }} or be prepended when the tokenizer's post-processor adds it)."""
    info = fixture_info(run.fixture)
    ex = exports.get(*run)
    hc = json.loads((ex.out / "resources" / "hailo-config.json").read_text())
    tc = json.loads((FIXTURES / run.fixture / "tokenizer_config.json").read_text())
    jinja = FIXTURES / run.fixture / "chat_template.jinja"  # transformers >= 4.43 saves it there first
    if jinja.is_file():
        tc["chat_template"] = jinja.read_text()
    if "chat_template" not in tc:
        assert "chat_template" not in hc or isinstance(hc["chat_template"], str), hc.get("chat_template")
        return
    assert isinstance(hc.get("chat_template"), str) and hc["chat_template"]
    tmpl = tc["chat_template"]
    bos = tc.get("bos_token")
    bos = bos.get("content") if isinstance(bos, dict) else bos
    # The BOS text is printed as a Jinja string literal (issue 41, item 6; the fixtures' BOS texts
    # hold no quote): in front when the tokenizer's post-processor adds it, else in {{ bos_token }}'s place.
    if bos and info.get("tokenizer", {}).get("bos_prepended_by_post_processor"):
        tmpl = "{{ '" + bos + "' }}" + tmpl.replace("{{ bos_token }}", "")
    elif bos:
        tmpl = tmpl.replace("{{ bos_token }}", "{{ '" + bos + "' }}")
    older_minja = [c for c in ex.manifest["resource_changes"] if "hailo-ollama's older minja" in c]
    if not older_minja:
        assert hc["chat_template"] == tmpl, (hc["chat_template"], tmpl)
    else:  # rewritten for hailo-ollama (issue 37): the same text as the original, rendered by jinja2
        assert renders_alike(hc["chat_template"], tmpl), older_minja


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


@pytest.mark.parametrize("run", LAYOUT_RUNS)
def test_inputs_match_runtime_layout(run, exports, tmp_path):
    """`llm2hef inputs` lays the prompt out as the genai runtime does: bottom-aligned
    embeddings at positions 0..n-1, the head-tiled 0/-100 mask, cos/sin(theta * p)
    (float32 product) for q and k, and exactly cos 1, sin 0 where theta is 0."""
    N = run.cache
    heads = config_dims(run.fixture)["heads"]
    ex = exports.get(*run)
    emb = np.load(ex.out / "resources" / "embeddings.npy")
    theta = np.load(ex.out / "resources" / "theta.npy").astype(np.float32)
    refs = reference(run.fixture)
    for n in sorted({1, 3, N // 2 + 1, N}):
        tokens = refs[max(L for L in refs if L >= n)][0][:n]
        f = ex.inputs(tokens, tmp_path)
        assert set(f) == set(INPUT_NAMES) | {"positions"}, sorted(f)
        shapes = {"inputs_embeds": (1, N, emb.shape[1]), "attention_mask": (1, 1, N, heads * N)}
        for k in INPUT_NAMES:
            assert f[k].dtype == np.float32, (k, f[k].dtype)
            assert f[k].shape == shapes.get(k, (1, N, theta.size)), (k, f[k].shape)
        assert f["positions"].dtype == np.int64 and f["positions"].shape == (N,)
        pad = N - n
        assert np.array_equal(f["positions"][pad:], np.arange(n))
        assert_runtime_layout(f, emb, theta, tokens, N, heads)
        for k in INPUT_NAMES[2:]:
            assert np.all(f[k][0, pad:, theta == 0] == (1.0 if "cos" in k else 0.0)), k
