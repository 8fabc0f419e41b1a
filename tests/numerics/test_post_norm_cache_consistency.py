"""Cache consistency for Gemma 2/3 and OLMo 2 (as for the Llama family): later
rows never move earlier real rows, padding rows are inert, and a token's hidden
state does not depend on how far the prompt goes on. One fixture per adapter;
judged on the final-norm hidden states exposed as an extra graph output."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, post_norm_combos
from numerics_checks import consistency_tests

COMBOS = [pytest.param(c, id=llama_combo_id(c))
          for c in post_norm_combos(["gemma3-tiny", "gemma2-tiny", "olmo2-tiny"])]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(COMBOS, kind="post_norm_consistency", hidden_key="hidden_size",
                                              vocab_key=None)
