"""The checks the numerics tests share: the logit match against the Hugging Face
references, the cache-consistency checks on the final-norm hidden states, and
the graph-contract pieces. The table-driven files (test_logits.py,
test_cache_consistency.py, test_contract.py) and the per-family files under
families/ pass their exports, thresholds and report kinds in."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import BY_FIXTURE, INPUT_NAMES, reference

PE = INPUT_NAMES[2:]
SUFFIX_ROLES = ["embeddings", "attention_mask", "pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin"]


# --------------------------------------------------------------------------- logit match
def cosine(a, b) -> float:
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def logit_cases(runs) -> list:
    """(run, L) for every reference length L that fits the run's cache."""
    return [pytest.param(run, L, id=f"{run.id}-L{L}") for run in runs
            for L in reference(run.fixture) if L <= run.cache]


def family_of(ex) -> str:
    """The export's family, for the report (a real model outside the table has none)."""
    fam = BY_FIXTURE.get(ex.fixture)
    return fam.adapter if fam else ""


def check_logits_match_hf(ex, length, tmp_path, report, record_property, *, kind: str,
                          max_abs: float | None, min_cosine: float, label: str) -> None:
    """Feed `llm2hef inputs` for reference length `length`, compare the last-position
    logits with HF's: cosine >= min_cosine and (unless None) max|diff| <= max_abs."""
    tokens, ref = reference(ex.fixture)[length]
    feeds = ex.inputs(tokens, tmp_path)
    logits = ex.run(feeds)
    assert logits.shape == (1, 1, ref.shape[0]), logits.shape
    got = logits[0, 0].astype(np.float32)
    assert np.all(np.isfinite(got)), "non-finite logits"
    diff = float(np.abs(got.astype(np.float64) - ref).max())
    cos = cosine(got, ref)
    argmax_ok = int(np.argmax(got) == np.argmax(ref))
    passed = cos >= min_cosine and (max_abs is None or diff <= max_abs)
    record_property("max_abs_diff", diff)
    record_property("cosine", cos)
    record_property("argmax_match", argmax_ok)
    report.append(dict(kind=kind, family=family_of(ex), fixture=ex.fixture, cache=ex.cache, option=ex.option,
                       length=length, max_abs=diff, cosine=cos, argmax_ok=argmax_ok, passed=passed))
    msg = (f"{label} L={length}: max|diff| {diff:.3e}, "
           f"cosine {cos:.8f}, argmax {'same' if argmax_ok else 'differs'}")
    if max_abs is not None:
        assert diff <= max_abs, msg
    assert cos >= min_cosine, msg


# --------------------------------------------------------------------------- cache consistency
# Rows that must not move should be identical up to float32 reassociation noise.
REL_TOL = 1e-6
# A perturbation that is supposed to change rows must change them by this much.
MIN_MOVE = 1e-3


def tol(ref: np.ndarray) -> float:
    return REL_TOL * max(1.0, float(np.abs(ref).max()))


def record_consistency(report, kind, ex, check, max_abs, moved) -> None:
    report.append(dict(kind=kind, family=family_of(ex), fixture=ex.fixture, cache=ex.cache, option=ex.option,
                       check=check, max_abs=max_abs, moved=moved))


def check_hidden_output(ex, hidden_size: int) -> None:
    outs = ex.session("hidden").get_outputs()
    assert outs[0].name == "logits"
    assert list(outs[1].shape) == [1, ex.cache, hidden_size], outs[1].shape


def check_causality(c) -> tuple[float, float]:
    """(a) changing the rows after row i leaves the real rows <= i alone.
    Returns (worst |diff| of the rows that must not move, least move of the others)."""
    N = c.N
    worst, moved_min = 0.0, np.inf
    for n in sorted({N, N // 2 + 3}):
        pad = N - n
        base = c.feeds(n)
        h0, _ = c.hidden(base)
        for i in sorted({pad, pad + 1, (pad + N) // 2, N - 2}):
            f = c.randomize_rows(base, np.arange(i + 1, N))
            h1, _ = c.hidden(f)
            d = float(np.abs(h1[pad:i + 1] - h0[pad:i + 1]).max())
            moved = float(np.abs(h1[i + 1:] - h0[i + 1:]).max())
            worst, moved_min = max(worst, d), min(moved_min, moved)
            assert moved > MIN_MOVE, f"perturbing rows > {i} did not change them (n={n})"
            assert d <= tol(h0), (f"n={n}: perturbing rows {i + 1}..{N - 1} moved real rows "
                                  f"{pad}..{i} by {d:.3e}")
    return worst, moved_min


def check_padding_rows_inert(c, pe_mode: str) -> tuple[float, float]:
    """(b) whatever sits in the padding rows, the real rows and the logits do not move."""
    N = c.N
    worst, moved_min = 0.0, np.inf
    for n in sorted({1, 2, N // 2, N - 1}):
        pad = N - n
        base = c.feeds(n)
        h0, l0 = c.hidden(base)
        for _ in range(2):
            f = c.randomize_rows(base, np.arange(pad), pe_mode)
            h1, l1 = c.hidden(f)
            d = float(np.abs(h1[pad:] - h0[pad:]).max())
            dl = float(np.abs(l1 - l0).max())
            moved = float(np.abs(h1[:pad] - h0[:pad]).max())
            worst, moved_min = max(worst, d), min(moved_min, moved)
            assert moved > MIN_MOVE, f"n={n}: randomizing the padding rows did not change them"
            assert d <= tol(h0), f"n={n}: padding rows moved the real rows by {d:.3e}"
            assert dl <= tol(l0), f"n={n}: padding rows moved the logits by {dl:.3e}"
    return worst, moved_min


def check_prefix_consistency(c) -> float:
    """(c) token k's hidden state is the same whether the prompt ends at k or goes on."""
    N = c.N
    h_full, _ = c.hidden(c.feeds(N))
    worst = 0.0
    for k in sorted({0, 1, 5, N // 2, N - 2}):
        h_pre, _ = c.hidden(c.feeds(k + 1))
        # Prompt of k+1 tokens: token k on row N-1. Full prompt: token k on row k.
        d = float(np.abs(h_pre[N - 1] - h_full[k]).max())
        worst = max(worst, d)
        assert d <= 10 * tol(h_full), f"token {k}: prefix run and full run differ by {d:.3e}"
        m = min(N, k + 4)
        if m != N:
            h_mid, _ = c.hidden(c.feeds(m))
            d = float(np.abs(h_mid[N - m + k] - h_full[k]).max())
            worst = max(worst, d)
            assert d <= 10 * tol(h_full), f"token {k}: {m}-token run and full run differ by {d:.3e}"
    return worst


# --------------------------------------------------------------------------- graph contract
def dims_of(vi):
    t = vi.type.tensor_type
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]


def check_onnx_full(ex) -> None:
    import onnx
    # A path (not a ModelProto) so that the checker finds the external data.
    onnx.checker.check_model(str(ex.out / "model.onnx"), full_check=True)


def assert_graph_io(m, want: dict[str, list[int]], vocab: int) -> None:
    """The six float inputs, in order, with the shapes in `want`, and the one
    output `logits` [1, 1, vocab]."""
    import onnx
    init_names = {i.name for i in m.graph.initializer}
    graph_inputs = [i for i in m.graph.input if i.name not in init_names]
    assert [i.name for i in graph_inputs] == INPUT_NAMES
    for vi in graph_inputs:
        assert vi.type.tensor_type.elem_type == onnx.TensorProto.FLOAT, vi.name
        assert dims_of(vi) == want[vi.name], (vi.name, dims_of(vi))
    assert [o.name for o in m.graph.output] == ["logits"]
    assert dims_of(m.graph.output[0]) == [1, 1, vocab]


def assert_inputs_consumed(m, subgraphs: bool) -> None:
    """Every graph input is consumed by at least one node (with `subgraphs`, nodes
    inside GRAPH attributes count too)."""
    import onnx
    consumed = {i for n in m.graph.node for i in n.input}
    if subgraphs:
        for node in m.graph.node:
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    consumed |= {i for n in a.g.node for i in n.input}
    for name in INPUT_NAMES:
        assert name in consumed, f"graph input {name} is not consumed by any node"


def assert_static_shapes(m) -> None:
    """Shape inference finds no symbolic dimension anywhere."""
    import onnx
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        for d in vi.type.tensor_type.shape.dim:
            assert d.HasField("dim_value"), f"{vi.name} has a dynamic dimension"


def runtime_mask(cache: int, pad: int) -> np.ndarray:
    """One head's mask as the genai runtime lays it out: padding rows allow
    everything; real row r blocks the padding columns and the future; 0 / -100."""
    want = np.zeros((cache, cache), np.float32)
    for r in range(pad, cache):
        want[r, :pad] = -100.0
        want[r, r + 1:] = -100.0
    return want


def assert_runtime_layout(f, emb, theta, tokens, cache: int, heads: int) -> None:
    """Feeds of `llm2hef inputs` for `tokens`: bottom-aligned embeddings, the
    head-tiled mask, and cos/sin(theta * p) (float32 product) for q and k."""
    n = len(tokens)
    pad = cache - n
    assert np.array_equal(f["inputs_embeds"][0, pad:], emb[tokens])
    assert np.array_equal(f["attention_mask"][0, 0], np.tile(runtime_mask(cache, pad), (1, heads)))
    ang = theta[None, :] * np.arange(n, dtype=np.float32)[:, None]
    for k, fn in [("pe_q_cos", np.cos), ("pe_k_cos", np.cos), ("pe_q_sin", np.sin), ("pe_k_sin", np.sin)]:
        np.testing.assert_allclose(f[k][0, pad:], fn(ang), atol=2e-6, rtol=0, err_msg=k)
