"""Gemma 2's attention soft-cap (Div -> Tanh -> Mul between q.k^T and the
mask add) has no public DFC parse (issue 37): the export says so in
manifest.json's notes and `inspect` prints it; without the soft-cap there is
nothing to say. export prints the note too."""
from __future__ import annotations

import json
import shutil

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run

FIXTURE = FIXTURES / "gemma2-tiny"
NOTE = "unproven on the DFC: the attention soft-cap (Div -> Tanh -> Mul between q.k^T and the mask add"


def test_export_and_inspect_say_the_attention_soft_cap_is_unproven(tmp_path):
    out = tmp_path / "out"
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 0, r.stderr
    notes = json.loads((out / "manifest.json").read_text())["notes"]
    assert sum(n.startswith(NOTE) for n in notes) == 1, notes
    assert "note: " + NOTE in r.stdout  # said where it is exported, not only in the manifest
    r = run("inspect", FIXTURE)
    assert r.returncode == 0, r.stderr
    assert "note: " + NOTE in r.stdout
    report = json.loads(run("inspect", FIXTURE, "--json").stdout)
    assert sum(n.startswith(NOTE) for n in report["notes"]) == 1


def test_no_note_without_the_attention_soft_cap(tmp_path):
    model = tmp_path / "gemma2-nocap"
    shutil.copytree(FIXTURE, model)
    config = json.loads((model / "config.json").read_text())
    config["attn_logit_softcapping"] = None
    (model / "config.json").write_text(json.dumps(config))
    r = run("inspect", model)
    assert r.returncode == 0, r.stderr
    assert NOTE not in r.stdout
    assert "attention logits soft-capped" not in r.stdout
