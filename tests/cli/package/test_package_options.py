"""`package`'s inputs besides the HEF (issues 28 and 40): the hailo-config.json
given to `hef set-config` (--config), the folder searched for hailo-ollama's
store when there is none, and the store manifest's details (parameter size,
quantization level) from the export and its precision plan."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import hef_writer as hw
from llm2hef_cli import BIN, FIXTURES
from llm2hef_cli import llm2hef as run


@pytest.fixture(scope="module")
def gpt2_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt2") / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16, "--no-progress",
            "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def write_hef(path, export, **over):
    path.write_bytes(hw.genai_hef(**hw.spec_from_export(export, **over)))
    return path


def test_package_takes_the_config_given_to_set_config(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    cfg = json.loads((gpt2_export / "resources" / "hailo-config.json").read_text())
    cfg["chat_template"] += "{# edited with set-config #}"
    new = tmp_path / "new-config.json"
    new.write_text(json.dumps(cfg))
    patched = tmp_path / "patched.hef"
    r = run("hef", "set-config", hef, new, "-o", patched, "--no-progress")
    assert r.returncode == 0, r.stderr
    store = tmp_path / "store"
    store.mkdir()
    args = ["package", patched, "--manifest", gpt2_export / "manifest.json", "--store", store, "--model", "g:1",
            "--no-progress"]
    r = run(*args)
    assert r.returncode == 3 and "--config NEW.json" in r.stderr, r.stderr
    r = run(*args, "--config", new)
    assert r.returncode == 0, r.stderr
    manifest = (store / "manifests" / "g" / "1" / "manifest.json").read_text()
    assert "edited with set-config" in manifest
    # A config that is not the HEF's is still refused, naming that file.
    r = run(*args, "--config", gpt2_export / "resources" / "hailo-config.json", "--force")
    assert r.returncode == 3 and "hailo-config.json" in r.stderr


def test_no_hailo_ollama_folder_names_the_folder_searched(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    data, home = tmp_path / "xdg", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    env = dict(os.environ, XDG_DATA_HOME=str(data), HOME=str(home), XDG_DATA_DIRS=str(tmp_path / "nowhere"))
    r = subprocess.run([str(BIN), "package", str(hef), "--manifest", str(gpt2_export / "manifest.json"), "--model",
                        "g:1"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert "or create %s" % (data / "hailo-ollama") in r.stderr, r.stderr
    assert "~/.local/share" not in r.stderr


def plan(path: Path, **fields) -> Path:
    doc = {"version": 1, "plan": {"default_mode": "a8_w4", "lines": []},
           "budget": {"extra_weight_bytes": 0, "extra_activation_bytes": 0, "weight_bytes_default": 0}} | fields
    path.write_text(json.dumps(doc))
    return path


def test_package_details_come_from_the_export_and_the_plan(tmp_path):
    out = tmp_path / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16, "--no-progress", "--json")
    assert r.returncode == 0, r.stderr
    parameters = json.loads(r.stdout)["model"]["parameters"]
    assert parameters == json.loads(run("inspect", FIXTURES / "gpt2-tiny", "--json").stdout)["parameters"]
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(**hw.spec_from_export(out)))

    def details(store, *extra):
        r = run("package", hef, "--manifest", out / "manifest.json", "--store", store, "--model", "tiny",
                "--no-progress", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads((store / "manifests" / "tiny" / "latest" / "manifest.json").read_text())["details"]

    d = details(tmp_path / "a")
    assert d["parameter_size"] == "%.0fK" % (parameters / 1e3) and d["quantization_level"] == "A8W4", d
    # compile.py applies OUT/quantization.json by itself: so does package's details.
    plan(out / "quantization.json", model="gpt2-tiny", calibration={"cache_size": 64},
         plan={"default_mode": "a8_w4", "lines": [
             {"onnx_node": "/a", "precision_mode": "a16_w16"}, {"onnx_node": "/b", "precision_mode": "a16_w16"},
             {"onnx_node": "/c", "precision_mode": "a8_w8"}]})
    assert details(tmp_path / "b")["quantization_level"] == "A8W4 + 2 A16W16 + 1 A8W8"
    other = plan(tmp_path / "other.json", model="gpt2-tiny", calibration={"cache_size": 128})
    r = run("package", hef, "--manifest", out / "manifest.json", "--store", tmp_path / "c", "--model", "tiny",
            "--plan", other)
    assert r.returncode == 3 and "calibration.cache_size" in r.stderr and not (tmp_path / "c").exists(), r.stderr
