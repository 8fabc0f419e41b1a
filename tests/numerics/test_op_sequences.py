"""Op spellings: every decoder layer of llm2hef's graph uses the op types, in
the order, that torch's TorchScript exporter writes for the formulation the
DFC is known to parse (hailo-contract.md section 2, "Op patterns").

The reference sequences (tests/fixtures/op-sequences/<fixture>.json) are
written by tools/fixtures/make_op_sequences.py, which builds one decoder layer
of that formulation in PyTorch from the fixture's config.json and exports it
with torch.onnx.export (dynamo=False, opset 17, do_constant_folding=False).
Shape plumbing, which torch writes for `x.view(b, s, ...)` with b and s read
from the tensor and llm2hef writes as constants, is left out on both sides.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict

import onnx
import pytest
from onnx import TensorProto, helper

from conftest import DEFAULT, FIXTURES, export_caches, fixture_info, run_llm2hef

SHAPE_PLUMBING = {"Shape", "Gather", "Unsqueeze", "Concat", "Constant"}
LAYER_NODE = re.compile(r"^/model/layers\.(\d+)/")
REFERENCES = sorted(p.stem for p in (FIXTURES / "op-sequences").glob("*.json"))


def export_for(exports, fixture: str):
    """The export at the fixture's largest cache, without options: GPT-2 is compared
    with its default GELU (x * sigmoid(1.702 x), the form SEED parsed)."""
    return exports.get(fixture, export_caches(fixture)[0], DEFAULT)


def layer_op_sequences(model_path) -> dict[int, list[str]]:
    """Op types per decoder layer (nodes named /model/layers.N/...), graph order."""
    model = onnx.load(str(model_path), load_external_data=False)
    layers: dict[int, list[str]] = defaultdict(list)
    for node in model.graph.node:
        m = LAYER_NODE.match(node.name)
        if m and node.op_type not in SHAPE_PLUMBING:
            layers[int(m.group(1))].append(node.op_type)
    return dict(layers)


def first_difference(ours: list[str], torch_ops: list[str]) -> str:
    for i, (a, b) in enumerate(zip(ours, torch_ops)):
        if a != b:
            return (f"first difference at op {i}: ours {a!r}, torch {b!r}\n"
                    f"  ours  [{i - 3 if i > 3 else 0}:]: {' '.join(ours[max(0, i - 3):i + 6])}\n"
                    f"  torch [{i - 3 if i > 3 else 0}:]: {' '.join(torch_ops[max(0, i - 3):i + 6])}")
    return f"lengths differ: ours {len(ours)} ops, torch {len(torch_ops)} (the shorter is a prefix of the longer)"


def test_every_reference_names_a_fixture():
    # One Llama-family fixture at least, one Qwen3 and one GPT-2 (issue 10, item 4).
    assert {"qwen3-tiny", "gpt2-tiny"} <= set(REFERENCES)
    assert set(REFERENCES) & {"llama3-tiny", "qwen2-tiny"}
    for name in REFERENCES:
        assert (FIXTURES / name / "config.json").is_file(), name


@pytest.mark.parametrize("fixture", REFERENCES)
def test_layer_ops_match_torch(fixture, exports):
    ref = json.loads((FIXTURES / "op-sequences" / f"{fixture}.json").read_text())
    torch_ops = [op for op in ref["layer_ops"] if op not in SHAPE_PLUMBING]
    assert torch_ops, f"{fixture}: empty reference"
    layers = layer_op_sequences(export_for(exports, fixture).out / "model.onnx")
    cfg = fixture_info(fixture)["config"]
    n_layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    assert sorted(layers) == list(range(n_layers)), f"{fixture}: layers found {sorted(layers)}"
    for index, ours in layers.items():
        assert ours == torch_ops, (f"{fixture} layer {index} differs from torch's export "
                                   f"({ref['exporter']}):\n{first_difference(ours, torch_ops)}")


def lint_findings(model_path) -> list[dict]:
    proc = run_llm2hef(["lint", model_path, "--json"], check=False)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"]


@pytest.mark.parametrize("fixture", REFERENCES)
def test_lint_knows_every_op_we_emit(fixture, exports):
    """LayerNormalization and Div are known ops: our exports get no unknown-op warning."""
    findings = lint_findings(export_for(exports, fixture).out / "model.onnx")
    assert [f for f in findings if f["rule"] == "unknown-op"] == []


def test_lint_names_torchs_spelling_of_reciprocal(tmp_path):
    x = helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, [1, 4, 8])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4, 8])
    node = helper.make_node("Reciprocal", ["inputs_embeds"], ["logits"], name="/model/norm/Reciprocal")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "reciprocal.onnx"
    onnx.save(model, str(path))
    hits = [f for f in lint_findings(path) if f["rule"] == "unknown-op"]
    assert len(hits) == 1 and hits[0]["severity"] == "warning", hits
    assert "Sqrt then Div" in hits[0]["message"], hits[0]["message"]
