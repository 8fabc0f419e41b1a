"""Cache consistency (DESIGN.md "The graph contract"): tokens may interact only
through the attention matmuls whose second operand carries the keys. Judged on
the final-norm hidden states, exposed as an extra graph output.

(a) causality: changing the rows after row i leaves the real rows <= i alone;
(b) padding rows are inert: whatever sits in them, the real rows do not move;
(c) prefix consistency: token k's hidden state is the same whether the prompt
    ends at k or goes on, which is what lets the DFC split the graph into a
    prefill scope and a token-by-token scope sharing a KV cache.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import INPUT_NAMES, combos, combo_id, fixture_info

PE = INPUT_NAMES[2:]
COMBOS = [pytest.param(c, id=combo_id(c)) for c in combos()]
# Rows that must not move should be identical up to float32 reassociation noise.
REL_TOL = 1e-6
# A perturbation that is supposed to change rows must change them by this much.
MIN_MOVE = 1e-3


def tol(ref: np.ndarray) -> float:
    return REL_TOL * max(1.0, float(np.abs(ref).max()))


class Ctx:
    def __init__(self, ex, tmp_path):
        self.ex = ex
        self.tmp = tmp_path
        cfg = fixture_info(ex.fixture)["config"]
        self.N = ex.cache
        self.V = cfg["vocab_size"]
        self.rng = np.random.default_rng(1000 + self.N)
        self.emb = np.load(ex.out / "resources" / "embeddings.npy")
        self.tokens = self.rng.integers(0, self.V, size=self.N)
        # A full prompt puts position p on row p: the runtime's pe rows per position.
        self.full = ex.inputs(self.tokens, tmp_path)

    def feeds(self, n):
        if n == self.N:
            return {k: v.copy() for k, v in self.full.items()}
        return self.ex.inputs(self.tokens[:n], self.tmp)

    def randomize_rows(self, f, rows, pe_mode="positions"):
        """New embeddings and pe rows for `rows` (the mask is left as it is)."""
        f = {k: v.copy() for k, v in f.items()}
        rows = np.asarray(rows)
        f["inputs_embeds"][0, rows] = self.emb[self.rng.integers(0, self.V, size=rows.size)]
        if pe_mode == "positions":  # rows of other, valid positions
            pos = self.rng.integers(0, self.N, size=rows.size)
            for k in PE:
                f[k][0, rows] = self.full[k][0, pos]
        else:  # arbitrary values in [-1, 1]
            for k in PE:
                f[k][0, rows] = self.rng.uniform(-1, 1, size=f[k][0, rows].shape).astype(np.float32)
        return f

    def hidden(self, f):
        return self.ex.run_hidden(f)


def record(report, ex, check, max_abs, moved):
    report.append(dict(kind="consistency", fixture=ex.fixture, cache=ex.cache, gelu=ex.gelu,
                       check=check, max_abs=max_abs, moved=moved))


@pytest.mark.parametrize("combo", COMBOS)
def test_hidden_output_found(combo, exports):
    ex = exports.get(*combo)
    sess = ex.session("hidden")
    outs = sess.get_outputs()
    assert [o.name for o in outs][0] == "logits"
    H = fixture_info(ex.fixture)["config"]["n_embd"]
    assert list(outs[1].shape) == [1, ex.cache, H], outs[1].shape


@pytest.mark.parametrize("combo", COMBOS)
def test_causality(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    c = Ctx(ex, tmp_path)
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
    record(report, ex, "causality", worst, moved_min)


@pytest.mark.parametrize("pe_mode", ["positions", "uniform"])
@pytest.mark.parametrize("combo", COMBOS)
def test_padding_rows_inert(combo, pe_mode, exports, report, tmp_path):
    ex = exports.get(*combo)
    c = Ctx(ex, tmp_path)
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
    c = Ctx(ex, tmp_path)
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
    record(report, ex, "prefix consistency", worst, float("nan"))
