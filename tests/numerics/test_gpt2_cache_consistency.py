"""Cache consistency (docs/lint.md "The graph contract"): tokens may interact only
through the attention matmuls whose second operand carries the keys. Judged on
the final-norm hidden states, exposed as an extra graph output.

(a) causality: changing the rows after row i leaves the real rows <= i alone;
(b) padding rows are inert: whatever sits in them, the real rows do not move;
(c) prefix consistency: token k's hidden state is the same whether the prompt
    ends at k or goes on, which is what lets the DFC split the graph into a
    prefill scope and a token-by-token scope sharing a KV cache.

The tests are built by numerics_checks.consistency_tests (shared with the
Llama family); tokens are drawn from the config's vocabulary.
"""
from __future__ import annotations

import pytest

from conftest import combo_id, combos
from numerics_checks import consistency_tests

COMBOS = [pytest.param(c, id=combo_id(c)) for c in combos()]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(COMBOS, kind="consistency", hidden_key="n_embd",
                                              vocab_key="vocab_size")
