"""What only Gemma 2/3 and OLMo 2 have (the table-driven files judge their
exports like every family's): the fixtures cover Gemma 3's two RoPE bases side
by side in theta (and the one-base theta), and with sliding layers the plan
says why the export is exact at its cache. The band beyond the window:
test_gemma3_window_band.py."""
from __future__ import annotations

import pytest

from conftest import contract_runs, fixture_info, params

RUNS = params(r for r in contract_runs() if r.family.doc == "post-norm-decoders.md")


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


def test_gemma3_uses_two_bases():
    """The fixtures do cover the two-base theta (and the one-base one): HF keeps one
    inv_freq per layer type, different for Gemma 3 and equal for Gemma 2."""
    def bases(fixture):
        inv = fixture_info(fixture)["rotary_emb_inv_freq_by_layer_type"]
        return {tuple(v) for t, v in inv.items() if t in cfg_of(fixture)["layer_types"]}
    assert len(bases("gemma3-tiny")) == 2
    assert len(bases("gemma2-tiny")) == 1


@pytest.mark.parametrize("run", RUNS)
def test_sliding_window_note(run, exports):
    """With sliding layers, the plan says why the export is exact at this cache."""
    fixture, N, _ = run
    cfg = cfg_of(fixture)
    notes = " ".join(exports.get(*run).manifest.get("notes", []))
    if "sliding_attention" in cfg["layer_types"]:
        assert f"--cache {N} <= sliding_window {cfg['sliding_window']}" in notes, notes
        assert "exact" in notes
    else:
        assert "sliding_window" not in notes, notes
