"""Cache consistency (DESIGN.md "The graph contract"): tokens may interact only
through the attention matmuls whose second operand carries the keys. Judged on
the final-norm hidden states, exposed as an extra graph output.

(a) causality: changing the rows after row i leaves the real rows <= i alone;
(b) padding rows are inert: whatever sits in them, the real rows do not move;
(c) prefix consistency: token k's hidden state is the same whether the prompt
    ends at k or goes on, which is what lets the DFC split the graph into a
    prefill scope and a token-by-token scope sharing a KV cache.

The checks themselves are in numerics_checks.py (shared with the Llama family).
"""
from __future__ import annotations

import pytest

from conftest import ConsistencyCtx, combos, combo_id, fixture_info
from numerics_checks import (check_causality, check_hidden_output, check_padding_rows_inert,
                             check_prefix_consistency, record_consistency)

COMBOS = [pytest.param(c, id=combo_id(c)) for c in combos()]
KIND = "consistency"


def ctx(ex, tmp_path) -> ConsistencyCtx:
    # Tokens are drawn from the config's vocabulary.
    return ConsistencyCtx(ex, tmp_path, vocab=fixture_info(ex.fixture)["config"]["vocab_size"])


@pytest.mark.parametrize("combo", COMBOS)
def test_hidden_output_found(combo, exports):
    ex = exports.get(*combo)
    check_hidden_output(ex, fixture_info(ex.fixture)["config"]["n_embd"])


@pytest.mark.parametrize("combo", COMBOS)
def test_causality(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst, moved_min = check_causality(ctx(ex, tmp_path))
    record_consistency(report, KIND, ex, "causality", worst, moved_min)


@pytest.mark.parametrize("pe_mode", ["positions", "uniform"])
@pytest.mark.parametrize("combo", COMBOS)
def test_padding_rows_inert(combo, pe_mode, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst, moved_min = check_padding_rows_inert(ctx(ex, tmp_path), pe_mode)
    record_consistency(report, KIND, ex, f"padding inert ({pe_mode})", worst, moved_min)


@pytest.mark.parametrize("combo", COMBOS)
def test_prefix_consistency(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst = check_prefix_consistency(ctx(ex, tmp_path))
    record_consistency(report, KIND, ex, "prefix consistency", worst, float("nan"))
