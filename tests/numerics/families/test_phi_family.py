"""What only the Phi-3 / Phi / StableLM / GPT-NeoX adapters have (the
table-driven files judge their exports like every family's): the fixtures
cover every switch that changes the layer skeleton, and the longrope attention
factor is in the graph as a constant Mul on the rotary dimensions only."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import FAMILIES, contract_runs, fixture_info, load_graph, params

# The families docs/phi-family.md describes.
PHI_FAMILY = [x for f in FAMILIES if f.doc == "phi-family.md" for x in f.fixtures]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def test_every_switch_is_covered():
    """Both residual placements, qk_layernorm, qkv bias and partial rotary appear
    (the lengths: test_logits.py's test_every_required_length_is_covered)."""
    cfgs = {f: fixture_info(f)["config"] for f in PHI_FAMILY}
    for arch in ["gpt_neox", "stablelm"]:
        kinds = {c["parallel_residual"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == arch}
        assert kinds == {True, False}, (arch, kinds)
    assert any(c["qk_layernorm"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "phi")
    assert {c["qkv_bias"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "stablelm"} == {True, False}
    assert any(c["qk_layernorm"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "stablelm")
    assert all(c["rotary_dim"] < c["head_dim"] for f, c in cfgs.items() if f != "phi3-longrope")
    assert {c["rope_type"] for f, c in cfgs.items() if fixture_info(f)["adapter"] == "phi3"} == {"longrope"}


@pytest.mark.parametrize("run", params(r for r in contract_runs() if r.family.adapter == "phi3"))
def test_longrope_attention_factor_on_rotary_dims_only(run, exports):
    from onnx import numpy_helper
    fixture, _, _ = run
    cfg = cfg_of(fixture)
    m = load_graph(exports.get(*run))
    inits = {i.name: i for i in m.graph.initializer}
    factors = [numpy_helper.to_array(inits[n.input[1]]) for n in m.graph.node
               if n.op_type == "Mul" and n.name.endswith("rope_factor/Mul")]
    assert len(factors) == 2 * cfg["num_hidden_layers"], len(factors)
    af = np.float32(fixture_info(fixture)["rope_attention_scaling"])
    for f in factors:
        per_head = f.reshape(-1, cfg["head_dim"])
        assert np.all(per_head[:, :cfg["rotary_dim"]] == af) and np.all(per_head[:, cfg["rotary_dim"]:] == 1.0)
