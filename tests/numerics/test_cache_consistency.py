"""Cache consistency, for every family of the family table (docs/lint.md "The
graph contract"): tokens may interact only through the attention matmuls whose
second operand carries the keys (and, for LFM2, the mask-derived shift matmuls
on a cached B*x). Judged on the hidden states that feed the lm_head (after
OPT's project_out), exposed as an extra graph output.

(a) causality: changing the rows after row i leaves the real rows <= i alone;
(b) padding rows are inert: whatever sits in them (rows of other positions, or
    arbitrary pe values), the real rows and the logits do not move;
(c) prefix consistency: token k's hidden state is the same whether the prompt
    ends at k or goes on, which is what lets the DFC split the graph into a
    prefill scope and a token-by-token scope sharing a KV cache.

For OPT and GPT-2 this also checks that positions rebuilt from the pe tables
behave as the runtime's positions. The fixtures and caches are the table's
`consistency` and `consistency_caches` (the representative at every cache by
default); tokens are drawn from the embeddings' rows."""
from __future__ import annotations

import pytest

from conftest import ConsistencyCtx, config_dims, consistency_runs, params
from numerics_checks import (
    check_causality,
    check_hidden_output,
    check_padding_rows_inert,
    check_prefix_consistency,
    record_consistency,
)

RUNS = params(consistency_runs())
KIND = "consistency"


@pytest.mark.parametrize("run", RUNS)
def test_hidden_output_found(run, exports):
    check_hidden_output(exports.get(*run), config_dims(run.fixture)["hidden"])


@pytest.mark.parametrize("run", RUNS)
def test_causality(run, exports, report, tmp_path):
    ex = exports.get(*run)
    worst, moved_min = check_causality(ConsistencyCtx(ex, tmp_path))
    record_consistency(report, KIND, ex, "causality", worst, moved_min)


@pytest.mark.parametrize("pe_mode", ["positions", "uniform"])
@pytest.mark.parametrize("run", RUNS)
def test_padding_rows_inert(run, pe_mode, exports, report, tmp_path):
    ex = exports.get(*run)
    worst, moved_min = check_padding_rows_inert(ConsistencyCtx(ex, tmp_path), pe_mode)
    record_consistency(report, KIND, ex, f"padding inert ({pe_mode})", worst, moved_min)


@pytest.mark.parametrize("run", RUNS)
def test_prefix_consistency(run, exports, report, tmp_path):
    ex = exports.get(*run)
    worst = check_prefix_consistency(ConsistencyCtx(ex, tmp_path))
    record_consistency(report, KIND, ex, "prefix consistency", worst, float("nan"))
