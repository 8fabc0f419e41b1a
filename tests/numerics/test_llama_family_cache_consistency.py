"""Cache consistency for the Llama family (as test_gpt2_cache_consistency.py):
tokens interact only through attention, so (a) later rows never move earlier
real rows, (b) padding rows are inert, (c) a token's hidden state does not
depend on how far the prompt goes on. One fixture per adapter; judged on the
final-norm hidden states exposed as an extra graph output. The tests are built
by numerics_checks.consistency_tests; tokens are drawn from the embeddings' rows."""
from __future__ import annotations

import pytest

from conftest import LLAMA_CONSISTENCY, llama_combo_id, llama_combos
from numerics_checks import consistency_tests

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in llama_combos(LLAMA_CONSISTENCY)]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(COMBOS, kind="llama_consistency", hidden_key="hidden_size",
                                              vocab_key=None)
