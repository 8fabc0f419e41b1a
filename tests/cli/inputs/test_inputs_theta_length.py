"""`llm2hef inputs` cross-checks the manifest's theta_length against its
bound and against resources/theta.npy before reading it (issue 30, item 17)."""
from __future__ import annotations

import json
import shutil

import pytest

from llm2hef_cli import FIXTURES, llm2hef, sound

FIXTURE = FIXTURES / "gpt2-tiny"


def run(*args):
    return sound(llm2hef(*args, timeout=300))


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("theta") / "out"
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("value", [2**62, "half"], ids=["huge", "not-the-file"])
def test_inputs_refuses_a_theta_length_the_export_does_not_hold(exported, tmp_path, value):
    out = tmp_path / "out"
    shutil.copytree(exported, out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["theta_length"] = manifest["theta_length"] // 2 if value == "half" else value
    (out / "manifest.json").write_text(json.dumps(manifest))
    r = run("inputs", out, "--tokens", "1,2", "-o", tmp_path / "x.npz")
    assert r.returncode == 3, r.stderr
    assert "theta_length" in r.stderr and "manifest.json" in r.stderr
    assert not (tmp_path / "x.npz").exists()
