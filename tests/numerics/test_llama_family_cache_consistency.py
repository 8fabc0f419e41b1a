"""Cache consistency for the Llama family (as test_gpt2_cache_consistency.py):
tokens interact only through attention, so (a) later rows never move earlier
real rows, (b) padding rows are inert, (c) a token's hidden state does not
depend on how far the prompt goes on. One fixture per adapter; judged on the
final-norm hidden states exposed as an extra graph output."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import LLAMA_CONSISTENCY, ConsistencyCtx, fixture_info, llama_combo_id, llama_combos

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos(LLAMA_CONSISTENCY)]
REL_TOL = 1e-6
MIN_MOVE = 1e-3


def tol(ref: np.ndarray) -> float:
    return REL_TOL * max(1.0, float(np.abs(ref).max()))


def record(report, ex, check, max_abs, moved):
    report.append(dict(kind="llama_consistency", fixture=ex.fixture, cache=ex.cache, gelu=ex.gelu,
                       check=check, max_abs=max_abs, moved=moved))


@pytest.mark.parametrize("combo", COMBOS)
def test_hidden_output_found(combo, exports):
    ex = exports.get(*combo)
    outs = ex.session("hidden").get_outputs()
    assert outs[0].name == "logits"
    H = fixture_info(ex.fixture)["config"]["hidden_size"]
    assert list(outs[1].shape) == [1, ex.cache, H], outs[1].shape


@pytest.mark.parametrize("combo", COMBOS)
def test_causality(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    c = ConsistencyCtx(ex, tmp_path)
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
            assert d <= tol(h0), f"n={n}: perturbing rows {i + 1}..{N - 1} moved real rows {pad}..{i} by {d:.3e}"
    record(report, ex, "causality", worst, moved_min)


@pytest.mark.parametrize("pe_mode", ["positions", "uniform"])
@pytest.mark.parametrize("combo", COMBOS)
def test_padding_rows_inert(combo, pe_mode, exports, report, tmp_path):
    ex = exports.get(*combo)
    c = ConsistencyCtx(ex, tmp_path)
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
    record(report, ex, f"padding inert ({pe_mode})", worst, moved_min)


@pytest.mark.parametrize("combo", COMBOS)
def test_prefix_consistency(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    c = ConsistencyCtx(ex, tmp_path)
    N = c.N
    h_full, _ = c.hidden(c.feeds(N))
    worst = 0.0
    for k in sorted({0, 1, 5, N // 2, N - 2}):
        h_pre, _ = c.hidden(c.feeds(k + 1))
        d = float(np.abs(h_pre[N - 1] - h_full[k]).max())
        worst = max(worst, d)
        assert d <= 10 * tol(h_full), f"token {k}: prefix run and full run differ by {d:.3e}"
        m = min(N, k + 4)
        if m != N:
            h_mid, _ = c.hidden(c.feeds(m))
            d = float(np.abs(h_mid[N - m + k] - h_full[k]).max())
            worst = max(worst, d)
            assert d <= 10 * tol(h_full), f"token {k}: {m}-token run and full run differ by {d:.3e}"
    record(report, ex, "prefix consistency", worst, float("nan"))
