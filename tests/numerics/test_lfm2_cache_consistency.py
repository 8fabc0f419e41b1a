"""Cache consistency for LFM2 (as for the other families): with the conv layers
taken through mask-derived shifts, tokens still interact only through matmuls
the runtime's mask governs, so (a) later rows never move earlier real rows,
(b) padding rows are inert, (c) a token's hidden state does not depend on how
far the prompt goes on. Judged on the final-norm hidden states."""
from __future__ import annotations

import pytest

from conftest import lfm2_combos, llama_combo_id
from numerics_checks import consistency_tests

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in lfm2_combos()]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(COMBOS, kind="lfm2_consistency", hidden_key="hidden_size",
                                              vocab_key=None)
