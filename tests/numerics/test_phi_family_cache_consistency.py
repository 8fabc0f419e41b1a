"""Cache consistency for the Phi-3 / Phi / StableLM / GPT-NeoX exports (as for
the other families): partial rotary and parallel residuals mix no time steps
outside attention, so (a) later rows never move earlier real rows, (b)
padding rows are inert, (c) a token's hidden state does not depend on how far
the prompt goes on. Judged on the final-norm hidden states, at cache 32."""
from __future__ import annotations

import pytest

from conftest import PHI_CONSISTENCY, llama_combo_id, phi_combos
from numerics_checks import consistency_tests

COMBOS = [pytest.param(c, id=llama_combo_id(c)) for c in phi_combos(PHI_CONSISTENCY, [32])]

(test_hidden_output_found, test_causality, test_padding_rows_inert,
 test_prefix_consistency) = consistency_tests(COMBOS, kind="phi_consistency", hidden_key="hidden_size",
                                              vocab_key=None)
