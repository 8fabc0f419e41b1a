"""What only Mistral, Granite and OPT have (the table-driven files judge their
exports like every family's): what the plan says it rewrote (sliding window,
Granite's multipliers, OPT's positions, post-LN and projections), and OPT's
learned positions rebuilt from the pe tables with their offset of 2."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import INPUT_NAMES, contract_runs, fixture_info, params

RUNS = params(r for r in contract_runs() if r.family.adapter in ("mistral", "granite", "opt"))
OPT_RUNS = [r for r in RUNS if r.values[0].family.adapter == "opt"]


def cfg_of(fixture):
    return fixture_info(fixture)["config"]


@pytest.mark.parametrize("run", RUNS)
def test_rewrites_and_notes(run, exports):
    fixture, N, _ = run
    cfg = cfg_of(fixture)
    man = exports.get(*run).manifest
    text = "\n".join(man["rewrites"] + man["notes"])
    if fixture == "mistral-tiny":
        assert "sliding_window null" in text, text
    if fixture == "mistral-window":
        assert "sliding_window 64" in text and f"--cache {N}" in text and "exact" in text, text
    if fixture == "granite-tiny":
        for what, value in [("embedding multiplier", "12"), ("attention multiplier", "0.125"),
                            ("residual multiplier", "0.22"), ("logit scale", "0.166666")]:
            assert f"{what} {value}" in text, (what, text)
    if run.family.adapter == "opt":
        assert f"embed_positions rows 2..{N + 1}" in text, text
        assert ("post-LN" in text) == (not cfg["do_layer_norm_before"]), text
        assert ("project_in" in text) == (cfg["word_embed_proj_dim"] != cfg["hidden_size"]), text


def positions_model(src, dst):
    """The export with the rebuilt position rows (the output of scope
    model/positions) as a second graph output."""
    import onnx
    m = onnx.load(str(src), load_external_data=False)
    node = [n for n in m.graph.node if n.name == "/model/positions/sin_hi/Add"]
    assert len(node) == 1, "no /model/positions/sin_hi/Add node"
    name = node[0].output[0]
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims[:2] + [0]))
    m.graph.output[-1].type.tensor_type.shape.ClearField("dim")
    onnx.save(m, str(dst))
    return name


@pytest.mark.parametrize("run", OPT_RUNS)
def test_opt_positions_are_rows_offset_by_two(run, exports, checkpoints, tmp_path):
    """Fed a full prompt (token at row p has position p, as the runtime lays out
    a left-aligned prompt and as HF derives positions from an all-ones mask:
    cumsum - 1), the rebuilt positions equal embed_positions rows p + 2, and not
    rows p (the offset is really applied)."""
    import onnxruntime as ort
    fixture, N, _ = run
    ex = exports.get(*run)
    dst = ex.out / "model_with_positions.onnx"
    name = positions_model(ex.out / "model.onnx", dst)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(dst), so, providers=["CPUExecutionProvider"])
    tokens = np.arange(N) % cfg_of(fixture)["vocab_size"]
    feeds = ex.inputs(tokens, tmp_path)
    got = sess.run([name], {k: feeds[k] for k in INPUT_NAMES})[0][0]
    table = checkpoints(fixture)["model.decoder.embed_positions.weight"]
    assert table.shape[0] == cfg_of(fixture)["max_position_embeddings"] + 2
    err = float(np.abs(got - table[2:N + 2]).max())
    assert err < 1e-5, f"positions differ from embed_positions[2:{N + 2}] by {err}"
    assert float(np.abs(got - table[:N]).max()) > 0.1, "rows without the offset match too: the test cannot tell"
