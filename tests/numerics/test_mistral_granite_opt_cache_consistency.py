"""Cache consistency for Mistral, Granite and OPT (as
test_llama_family_cache_consistency.py): later rows never move earlier real
rows, padding rows are inert, and a token's hidden state does not depend on
how far the prompt goes on. For OPT this also checks that positions rebuilt
from the pe tables behave as the runtime's positions (a padding row's own
position cannot leak into real rows). Judged on the hidden states that feed
the lm_head (after OPT's project_out), at cache 32."""
from __future__ import annotations

import pytest

from conftest import llama_combo_id, mistral_granite_opt_combos
from numerics_checks import consistency_tests

KIND = "mistral_granite_opt_consistency"
DECODERS = [pytest.param(c, id=llama_combo_id(c))
            for c in mistral_granite_opt_combos(["mistral-tiny", "granite-tiny"]) if c[1] == 32]
OPT = [pytest.param(c, id=llama_combo_id(c))
       for c in mistral_granite_opt_combos(["opt-tiny", "opt-postln"]) if c[1] == 32]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(DECODERS, kind=KIND, hidden_key="hidden_size", vocab_key=None)
# OPT's lm_head input is word_embed_proj_dim wide (project_out).
(test_opt_hidden_output_found, test_opt_causality, test_opt_padding_rows_inert,
 test_opt_prefix_consistency) = consistency_tests(OPT, kind=KIND, hidden_key="word_embed_proj_dim", vocab_key=None)
