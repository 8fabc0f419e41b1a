"""Cache consistency for the Llama family (as test_gpt2_cache_consistency.py):
tokens interact only through attention, so (a) later rows never move earlier
real rows, (b) padding rows are inert, (c) a token's hidden state does not
depend on how far the prompt goes on. One fixture per adapter; judged on the
final-norm hidden states exposed as an extra graph output. The checks are in
numerics_checks.py."""
from __future__ import annotations

import pytest

from conftest import LLAMA_CONSISTENCY, ConsistencyCtx, fixture_info, llama_combo_id, llama_combos
from numerics_checks import (check_causality, check_hidden_output, check_padding_rows_inert,
                             check_prefix_consistency, record_consistency)

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos(LLAMA_CONSISTENCY)]
KIND = "llama_consistency"


@pytest.mark.parametrize("combo", COMBOS)
def test_hidden_output_found(combo, exports):
    ex = exports.get(*combo)
    check_hidden_output(ex, fixture_info(ex.fixture)["config"]["hidden_size"])


@pytest.mark.parametrize("combo", COMBOS)
def test_causality(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst, moved_min = check_causality(ConsistencyCtx(ex, tmp_path))
    record_consistency(report, KIND, ex, "causality", worst, moved_min)


@pytest.mark.parametrize("pe_mode", ["positions", "uniform"])
@pytest.mark.parametrize("combo", COMBOS)
def test_padding_rows_inert(combo, pe_mode, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst, moved_min = check_padding_rows_inert(ConsistencyCtx(ex, tmp_path), pe_mode)
    record_consistency(report, KIND, ex, f"padding inert ({pe_mode})", worst, moved_min)


@pytest.mark.parametrize("combo", COMBOS)
def test_prefix_consistency(combo, exports, report, tmp_path):
    ex = exports.get(*combo)
    worst = check_prefix_consistency(ConsistencyCtx(ex, tmp_path))
    record_consistency(report, KIND, ex, "prefix consistency", worst, float("nan"))
