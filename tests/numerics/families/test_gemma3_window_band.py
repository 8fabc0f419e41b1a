"""Sliding-window layers beyond their window (`--sliding-window band`): gemma3-window
slides over 32 positions; exported at --cache 64 with the constant band (the
family table's extra run), the graph, fed what the runtime feeds, reproduces HF's
logits at every length 1 .. 64 (test_logits.py), also beyond 32, where HF's
window binds (the fixture generator checks that one shared causal mask would
give other logits there). Exact in fp32; unproven on the DFC
(docs/post-norm-decoders.md). Here: the lengths do reach beyond the window, the
manifest records the band, and causality and inert padding rows hold with it."""
from __future__ import annotations

from conftest import BY_ADAPTER, ConsistencyCtx, Run, reference
from numerics_checks import check_causality, check_padding_rows_inert

BAND = Run("gemma3-window", 64, "band")


def test_band_is_a_logit_checked_run():
    assert tuple(BAND) in BY_ADAPTER["gemma3"].numerics.extra


def test_lengths_reach_beyond_the_window():
    assert max(reference(BAND.fixture)) == BAND.cache and any(32 < L < BAND.cache for L in reference(BAND.fixture))


def test_band_is_recorded(exports):
    man = exports.get(*BAND).manifest
    assert man["options"].get("sliding-window") == "band", man["options"]
    assert any("UNPROVEN on the DFC" in n for n in man["notes"]), man["notes"]


def test_band_causality_and_padding(exports, tmp_path):
    c = ConsistencyCtx(exports.get(*BAND), tmp_path)
    worst, moved = check_causality(c)
    assert worst == 0.0 and moved > 0
    for mode in ("positions", "uniform"):
        worst, moved = check_padding_rows_inert(c, mode)
        assert worst == 0.0 and moved > 0
