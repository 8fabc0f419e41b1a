"""`llm2hef calibrate` on one fixture of every family (random weights, cache
32): it must run end to end (ranges, plan, proxy) and write a
quantization.json whose plan names nodes of the exported model.onnx, plus the
report and the picture; and refuse bad arguments before any work, naming what
is wrong. The real model's figures are judged in
tests/numerics/test_smollm2_real.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
sys.path.insert(0, str(REPO / "tests"))
from family_table import representative_fixtures  # noqa: E402

# One fixture per family (tests/family_table.py).
FAMILIES = representative_fixtures()
CACHE = 32


def llm2hef(*args, check=True):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        pytest.fail(f"llm2hef {' '.join(map(str, args))} exited {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def export(name: str, tmp: Path) -> Path:
    out = tmp / name
    llm2hef("export", FIXTURES / name, "-o", out, "--cache", CACHE, "--prefill", 8, "--no-progress")
    return out


def prompts(vocab: int, lengths, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, size=n).tolist() for n in lengths]


@pytest.mark.parametrize("name", FAMILIES)
def test_calibrate_runs_on_every_family(name, tmp_path):
    import onnx
    out = export(name, tmp_path)
    vocab = json.loads((out / "manifest.json").read_text())["dims"]["vocab"]
    calib, held = tmp_path / "calib.json", tmp_path / "held.json"
    calib.write_text(json.dumps(prompts(vocab, (5, 17, 32), 1)))
    held.write_text(json.dumps(prompts(vocab, (9, 20), 2)))
    r = llm2hef("calibrate", out, "--calib-tokens", calib, "--eval-tokens", held, "--greedy-steps", 3,
                "--sensitivity-prompts", 1)
    q = json.loads((out / "quantization.json").read_text())
    # Where the outputs are is printed.
    for f in ("quantization.json", "quantization-report.md", "quantization.svg"):
        assert str(out / f) in r.stdout, r.stdout
    assert q["version"] == 1 and q["plan"]["default_mode"] == "a8_w4"
    nodes = {n.name: n.op_type for n in onnx.load(str(out / "model.onnx"), load_external_data=False).graph.node}
    for line in q["plan"]["lines"]:
        assert nodes.get(line["onnx_node"]) == line["op_type"] and line["op_type"] in ("MatMul", "Add", "Mul"), line
        # Only modes public Hailo-10H scripts write (docs/quantization.md).
        assert line["precision_mode"] in ("a8_w4", "a8_w8", "a16_w4_a16", "a16_w16"), line
        assert line.get("weight_group_size") in (None, 128), line
        assert line["reason"]
    kinds = {r["kind"] for r in q["ranges"]}
    assert {"conv_input", "residual", "softmax", "scores"} <= kinds, kinds
    assert all(r["values"] > 0 and r["min"] <= r["max"] and 0 < r["p999_abs"] <= r["max_abs"] * (1 + 1e-9)
               for r in q["ranges"] if r["max_abs"] > 0)
    sim = q["simulation"]
    assert "not a prediction" in sim["label"]
    assert set(sim["configurations"]) == {"fp32", "A8W4 default", "Hailo recipe", "plan",
                                          "plan activations, fp32 weights"}
    # Every down_proj the plan raises has its product raised with it (the producer of its 16-bit input).
    modes = {line["onnx_node"]: line["precision_mode"] for line in q["plan"]["lines"]}
    graph = onnx.load(str(out / "model.onnx"), load_external_data=False).graph
    producer = {o: n for n in graph.node for o in n.output}
    for n in graph.node:
        if modes.get(n.name, "").startswith("a16") and n.op_type == "MatMul":
            p = producer.get(n.input[0])
            if p is not None and p.op_type == "Mul":
                assert modes.get(p.name) == "a16_w16", (n.name, p.name)
    for row in ("A8W4 default", "Hailo recipe", "plan"):
        assert q["decode_speed"]["rows"][row]["bytes_per_token"] > 0
    assert sim["per_position"], "the lm_head was not found: logits judged at the last position only"
    assert sim["positions"] == 9 + 20
    for c in sim["configurations"].values():
        assert 1 <= len(c["greedy"]["tokens"]) <= 3
    xml.dom.minidom.parse(str(out / "quantization.svg"))
    assert "proxy" in (out / "quantization-report.md").read_text()


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> Path:
    return export("gpt2-tiny", tmp_path_factory.mktemp("gpt2"))


def test_refusals_name_what_is_wrong(gpt2, tmp_path):
    good = tmp_path / "good.json"
    good.write_text("[[1, 2, 3], [4, 5]]")
    bad = tmp_path / "bad.json"
    bad.write_text("[[1, 2], [3, 300]]")  # vocab 300
    one = tmp_path / "one.json"
    one.write_text("[[1, 2, 3]]")
    cases = [
        (["calibrate", gpt2], 2, "--calib-tokens"),
        (["calibrate", gpt2, "--calib-tokens", tmp_path / "none.json"], 2, "none.json: no such file"),
        (["calibrate", gpt2, "--calib-tokens", bad], 3, "sequence 1, position 1: 300"),
        (["calibrate", gpt2, "--calib-tokens", one], 2, "held-out prompts"),
        (["calibrate", gpt2, "--calib-tokens", good, "--precision-budget", "lots"], 2, "--precision-budget"),
        (["calibrate", gpt2, "--calib-tokens", good, "--python", tmp_path / "no-python"], 3, "cannot run"),
        (["calibrate", tmp_path, "--calib-tokens", good], 3, "manifest.json"),
    ]
    for args, code, text in cases:
        r = llm2hef(*args, check=False)
        assert r.returncode == code and text in r.stderr, (args, r.returncode, r.stderr)
        assert not (gpt2 / "quantization.json").exists()


def test_a_token_file_over_the_limit_is_refused_before_it_is_read(gpt2, tmp_path):
    """A token file's DOM was 10-25x the file (a 200 MB one cost 1.9 GB):
    past 16 MiB it is refused on its size, naming the file and the limit."""
    for option in ("--calib-tokens", "--eval-tokens"):
        big = tmp_path / (option[2:] + ".json")
        with open(big, "wb") as f:
            f.truncate((16 << 20) + 1)  # sparse: nothing is written, nothing may be read
        good = tmp_path / "good.json"
        good.write_text("[[1, 2, 3], [4, 5]]")
        args = ["--calib-tokens", big] if option == "--calib-tokens" else ["--calib-tokens", good, option, big]
        r = llm2hef("calibrate", gpt2, *args, check=False)
        assert r.returncode == 3 and str(big) in r.stderr, r.stderr
        assert "exceed the limit of 16777216 bytes (16 MiB) for a token-id file" in r.stderr, r.stderr
        assert not (gpt2 / "quantization.json").exists()


def test_calibrate_estimates_its_peak_and_refuses_beyond_the_limit(gpt2, tmp_path):
    """Issue 39: the estimate is printed before any run, and a run whose
    estimate is above --memory-limit is refused up front, naming the option,
    instead of being killed by the kernel half way."""
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(prompts(300, (5, 9), 4)))
    r = llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "--memory-limit", "1MiB", check=False)
    assert r.returncode == 1, r.stderr
    assert "refused before running" in r.stderr and "--memory-limit" in r.stderr, r.stderr
    assert "ranges:" not in r.stdout and not (gpt2 / "quantization.json").exists()
    r = llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "-o", tmp_path / "q.json",
                "--memory-limit", "8GiB", "--threads", 1)
    assert "memory: about" in r.stdout and "limit 8.00 GiB" in r.stdout, r.stdout
    assert "s per prompt" in r.stdout and "left" in r.stdout, r.stdout


def test_python_runs_with_malloc_settings_the_user_can_override(gpt2, tmp_path):
    """glibc's arenas kept onnxruntime's freed intermediates (SmolLM2 at cache
    2048: 2.86 GiB against 1.27 GiB): calibrate sets MALLOC_MMAP_THRESHOLD_ and
    MALLOC_ARENA_MAX for its Python unless the user set them."""
    fake = tmp_path / "python3"
    # The package check (`-c`) goes to a real Python; the script run is the stand-in's.
    fake.write_text('#!/bin/sh\n[ "$1" = "-c" ] && exec "%s" "$@"\nenv > "%s"\n'
                    % (sys.executable, tmp_path / "env.txt"))
    fake.chmod(0o755)
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(prompts(300, (5, 9), 4)))
    env = dict(os.environ, MALLOC_ARENA_MAX="4")
    r = subprocess.run([str(BIN), "calibrate", str(gpt2), "--calib-tokens", str(calib), "--no-simulate", "--python",
                        str(fake)], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    seen = (tmp_path / "env.txt").read_text().splitlines()
    assert "MALLOC_MMAP_THRESHOLD_=131072" in seen and "MALLOC_ARENA_MAX=4" in seen, seen


def test_a_python_killed_by_a_signal_is_named(gpt2, tmp_path):
    """Exit 137 used to read "failed with status 137": the signal is named,
    with the out-of-memory hint for SIGKILL."""
    fake = tmp_path / "python3"
    fake.write_text('#!/bin/sh\n[ "$1" = "-c" ] && exec "%s" "$@"\nkill -KILL $$\n' % sys.executable)
    fake.chmod(0o755)
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(prompts(300, (5, 9), 4)))
    r = llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "--python", fake, check=False)
    assert r.returncode == 1, r.stderr
    assert "was killed by SIGKILL (out of memory?" in r.stderr, r.stderr


def test_existing_outputs_need_force_and_budget_is_honoured(gpt2, tmp_path):
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(prompts(300, (30, 32, 31), 3)))
    out = tmp_path / "q.json"
    llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "-o", out, "--min-levels", 1e6)
    full = json.loads(out.read_text())
    assert full["plan"]["lines"], "--min-levels 1e6 puts every activation at 16 bits"
    r = llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "-o", out, check=False)
    assert r.returncode == 2 and "--force" in r.stderr
    budget = full["plan"]["lines"][0]["extra_bytes"]
    llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "-o", out, "--min-levels", 1e6,
            "--precision-budget", budget, "--force")
    cut = json.loads(out.read_text())
    assert cut["budget"]["spent_bytes"] <= budget and cut["plan_over_budget"]
    assert len(cut["plan"]["lines"]) + len(cut["plan_over_budget"]) == len(full["plan"]["lines"])
    assert "simulation" not in cut


def test_calib_text_is_cut_into_cache_windows(gpt2, tmp_path):
    """--calib-text: tokenized with the export's tokenizer.json as the runtime
    tokenizes a raw prompt (no BOS) and cut into windows of the cache size, the
    tail a last, shorter prompt, as compile.py builds the DFC's set."""
    text = tmp_path / "corpus.txt"
    text.write_text("The quick brown fox jumps over the lazy dog. " * 12 + "And a tail.", encoding="utf-8")
    held = tmp_path / "held.txt"
    held.write_text("A different sentence, held out for the proxy.", encoding="utf-8")
    out = tmp_path / "q.json"
    llm2hef("calibrate", gpt2, "--calib-text", text, "--eval-text", held, "-o", out, "--greedy-steps", 2,
            "--sensitivity-prompts", 1)
    q = json.loads(out.read_text())
    import tokenizers
    ids = tokenizers.Tokenizer.from_file(str(gpt2 / "resources" / "tokenizer.json")).encode(
        text.read_text(encoding="utf-8"), add_special_tokens=False).ids
    assert len(ids) % CACHE, "the text must leave a tail for this test"
    assert q["calibration"]["prompts"] == len(ids) // CACHE + 1 and q["calibration"]["tokens"] == len(ids)
    assert q["calibration"]["held_out_prompts"] == 1


def test_inspect_adds_the_plans_cost(gpt2, tmp_path):
    """inspect --plan: the plan's extra bytes (as calibrate counted them) are
    added to inspect's own estimate against the 8 GiB device; a plan file
    whose cost is missing or malformed is refused naming the field."""
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps(prompts(300, (30, 32, 31), 4)))
    plan = tmp_path / "q.json"
    llm2hef("calibrate", gpt2, "--calib-tokens", calib, "--no-simulate", "-o", plan, "--min-levels", 1e6)
    q = json.loads(plan.read_text())
    base = json.loads(llm2hef("inspect", FIXTURES / "gpt2-tiny", "--cache", CACHE, "--json").stdout)
    r = json.loads(llm2hef("inspect", FIXTURES / "gpt2-tiny", "--cache", CACHE, "--json", "--plan", plan).stdout)
    p = r["precision_plan"]
    assert p["lines"] == len(q["plan"]["lines"]) > 0
    assert p["extra_weight_bytes"] == q["budget"]["extra_weight_bytes"]
    assert p["extra_activation_bytes"] == q["budget"]["extra_activation_bytes"] > 0
    assert p["total_bytes"] == base["memory"]["total_bytes"] + p["extra_weight_bytes"] + p["extra_activation_bytes"]
    assert p["fits"] is True and r["memory"] == base["memory"]
    text = llm2hef("inspect", FIXTURES / "gpt2-tiny", "--cache", CACHE, "--plan", plan).stdout
    assert "with plan" in text and "total w/ plan" in text and str(plan) in text

    no_budget = dict(q)
    del no_budget["budget"]
    negative = json.loads(json.dumps(q))
    negative["budget"]["extra_weight_bytes"] = -5
    for doc, field in ((no_budget, "'budget'"), (negative, "'budget.extra_weight_bytes'")):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps(doc))
        r = llm2hef("inspect", FIXTURES / "gpt2-tiny", "--plan", bad, check=False)
        assert r.returncode == 3 and str(bad) in r.stderr and field in r.stderr, r.stderr
