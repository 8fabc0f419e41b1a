"""hailo-config.json is judged by one rule table wherever llm2hef writes it
(issue 30, item 11): `hef set-config` never writes a HEF that `hef check`
refuses and never copies a damaged input; `export` never writes a config
that `hef check` refuses. Every case runs the real binary."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURE = REPO / "tests" / "fixtures" / "gpt2-tiny"
sys.path.insert(0, str(REPO / "tools" / "fixtures"))
import hef_writer as hw  # noqa: E402


def run(*args):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert r.returncode >= 0 and "internal error" not in r.stderr, r.stderr
    return r


def test_set_config_refuses_an_empty_suffix_that_hef_check_refuses(tmp_path):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef())
    cfg = hw.genai_spec()["config"]
    cfg["input_layers_names_suffixes"]["embeddings"] = ""
    new = tmp_path / "new.json"
    new.write_text(json.dumps(cfg))
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", hef, new, "-o", out)
    assert r.returncode == 3, r.stderr
    assert "input_layers_names_suffixes.embeddings" in r.stderr and "empty" in r.stderr
    assert not out.exists()


def test_set_config_refuses_an_input_whose_checksum_is_wrong(tmp_path):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(digest_override={"tokenizer.json": 99}))
    new = tmp_path / "new.json"
    new.write_text(json.dumps(hw.genai_spec()["config"]))
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", hef, new, "-o", out)
    assert r.returncode == 3, r.stderr
    assert "'tokenizer.json'" in r.stderr and "XXH3" in r.stderr and str(hef) in r.stderr
    assert not out.exists()


def test_set_config_output_passes_hef_check(tmp_path):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef())
    cfg = hw.genai_spec()["config"]
    cfg["default_generation_params"] = {"max_new_tokens": 10}
    new = tmp_path / "new.json"
    new.write_text(json.dumps(cfg))
    out = tmp_path / "out.hef"
    assert run("hef", "set-config", hef, new, "-o", out).returncode == 0
    assert run("hef", "check", out).returncode == 0


@pytest.mark.parametrize("value", [-1, 2**40])
def test_export_never_writes_a_config_hef_check_refuses(tmp_path, value):
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    gen = model / "generation_config.json"
    doc = json.loads(gen.read_text()) if gen.exists() else {}
    doc["max_new_tokens"] = value
    gen.write_text(json.dumps(doc))
    out = tmp_path / "out"
    r = run("export", model, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 3, r.stderr
    assert "max_new_tokens" in r.stderr and "hef check" in r.stderr
    assert not out.exists()
