"""What a new user meets first (issue 16): output folders with the usual
mode and a created parent, a Hub id offline, a Hugging Face
cache snapshot, a rewritten --name, a missing tokenizer. The real binary."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

from llm2hef_cli import BIN, FIXTURES, REPO

FIXTURE = FIXTURES / "llama3-tiny"


def export(model, out, *extra, cwd=None):
    return subprocess.run([str(BIN), "export", str(model), "-o", str(out), "--cache", "32", "--prefill", "8",
                           "--no-progress", *extra], capture_output=True, text=True, timeout=300, cwd=cwd,
                          preexec_fn=lambda: os.umask(0o022))


def test_output_folder_gets_the_usual_mode_and_a_missing_parent_is_created(tmp_path):
    out = tmp_path / "not" / "yet" / "there" / "out"
    r = export(FIXTURE, out)
    assert r.returncode == 0, r.stderr
    assert (out / "model.onnx").is_file()
    assert stat.S_IMODE(out.stat().st_mode) == 0o755, oct(out.stat().st_mode)
    assert stat.S_IMODE((out / "resources").stat().st_mode) == 0o755


def test_a_hub_id_is_fetched_or_what_is_missing_is_said(tmp_path):
    # A Hub id is an input (issue 40; tests/cli/hub/test_hub.py fetches from a
    # stand-in Hub). Offline, with an empty cache, the message says that no
    # local folder has that name and what the cache lacks; nothing is sent.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(tmp_path / "hub"), HF_ENDPOINT="http://127.0.0.1:9")
    r = subprocess.run([str(BIN), "export", "Qwen/Qwen2.5-0.5B", "-o", str(tmp_path / "out")], capture_output=True,
                       text=True, timeout=60, cwd=tmp_path, env=env)
    assert r.returncode == 3, r.stderr
    assert "no local folder" in r.stderr and "HF_HUB_OFFLINE" in r.stderr
    assert "models--Qwen--Qwen2.5-0.5B/refs/main" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_cache_snapshot_is_named_after_its_repository(tmp_path):
    snapshot = tmp_path / "hub" / "models--SomeOrg--Tiny-Llama-3" / "snapshots" / "3f2a9c1d0b7e"
    shutil.copytree(FIXTURE, snapshot)
    out = tmp_path / "out"
    r = export(snapshot, out)
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["model"]["name"] == "Tiny-Llama-3"
    assert "3f2a9c1d" not in manifest["dfc"]["scope"]


def test_a_rewritten_name_is_said(tmp_path):
    out = tmp_path / "out"
    r = export(FIXTURE, out, "--name", "My-Model")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    scope = manifest["dfc"]["scope"]
    assert scope != "My-Model"
    said = [n for n in manifest["notes"] if "My-Model" in n and scope in n]
    assert said, manifest["notes"]
    assert "My-Model" in r.stderr and scope in r.stderr


def test_a_missing_tokenizer_says_how_to_get_one(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    (model / "tokenizer.json").unlink()
    r = export(model, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "tokenizer.json is missing" in r.stderr and "hf download ORG/NAME tokenizer.json" in r.stderr


def test_the_default_cache_stops_at_a_sliding_window():
    """A model whose layers slide gets the window as its default cache: the
    largest exact one (inspect and export share the rule)."""
    fixture = FIXTURES / "gemma3-window"
    window = json.loads((fixture / "config.json").read_text())["sliding_window"]
    r = subprocess.run([str(BIN), "inspect", str(fixture), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["cache_size"] == window and report["supported"]


def test_an_unsupported_rope_type_names_the_key_the_file_has(tmp_path):
    """transformers 5 writes rope_parameters: the refusal names that key."""
    model = tmp_path / "model"
    shutil.copytree(FIXTURES / "llama3-tf5", model)
    config = json.loads((model / "config.json").read_text())
    assert "rope_parameters" in config and "rope_scaling" not in config
    config["rope_parameters"] = {**config["rope_parameters"], "rope_type": "yarn", "factor": 4.0}
    (model / "config.json").write_text(json.dumps(config))
    r = export(model, tmp_path / "out")
    assert r.returncode == 4, r.stderr
    assert "field 'rope_parameters'" in r.stderr and "'yarn'" in r.stderr, r.stderr


def test_inspect_prints_whole_bytes_in_json_and_mib_below_a_gib():
    r = subprocess.run([str(BIN), "inspect", str(FIXTURE), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    memory = json.loads(r.stdout)["memory"]
    for key in ("weights_a8w4_bytes", "kv_cache_bytes", "embeddings_bin_bytes", "total_bytes", "device_bytes"):
        assert isinstance(memory[key], int), (key, memory[key])
    text = subprocess.run([str(BIN), "inspect", str(FIXTURE)], capture_output=True, text=True, timeout=120).stdout
    kv_line = next(line for line in text.splitlines() if line.startswith("KV cache"))
    assert "MiB" in kv_line and "GiB" not in kv_line, kv_line


def test_a_failing_command_with_json_prints_a_json_error_on_stdout(tmp_path):
    r = export(tmp_path / "missing", tmp_path / "out", "--json")
    assert r.returncode == 3
    error = json.loads(r.stdout)["error"]
    assert error["exit_status"] == 3 and error["kind"] == "bad_input"
    assert "no such folder" in error["message"] and "no such folder" in r.stderr
    usage = export(FIXTURE, tmp_path / "out2", "--json", "--cache", "1")
    assert usage.returncode == 2 and json.loads(usage.stdout)["error"]["kind"] == "usage"


def test_inputs_takes_ids_separated_by_commas_or_spaces_or_from_a_file(tmp_path):
    out = tmp_path / "out"
    assert export(FIXTURE, out).returncode == 0

    def inputs(*args):
        return subprocess.run([str(BIN), "inputs", str(out), *map(str, args)], capture_output=True, text=True,
                              timeout=120)

    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("5\n17, 3\n")
    written = []
    for i, how in enumerate([["--tokens", "5,17,3"], ["--tokens", "5 17 3"], ["--tokens", "5, 17 ,3"],
                             ["--tokens-file", ids_file]]):
        target = tmp_path / f"in{i}.npz"
        r = inputs(*how, "-o", target)
        assert r.returncode == 0, (how, r.stderr)
        written.append(target.read_bytes())
    assert all(w == written[0] for w in written)
    assert inputs("-o", tmp_path / "x.npz").returncode == 2
    assert inputs("--tokens", "5,,3", "-o", tmp_path / "x.npz").returncode == 2
    assert inputs("--tokens", "5", "--tokens-file", ids_file, "-o", tmp_path / "x.npz").returncode == 2


# --- D: a parent folder export made is removed again when export fails ------


def test_a_failed_export_removes_the_parent_folders_it_created(tmp_path):
    """The failure comes after the output's staging folder exists (a tokenizer.json
    that does not parse is read while the kit is written)."""
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    (model / "tokenizer.json").write_text("{not json")
    base = tmp_path / "work"
    base.mkdir()
    r = export(model, base / "new" / "deeper" / "out")
    assert r.returncode == 3, r.stderr
    assert "tokenizer.json" in r.stderr
    assert list(base.iterdir()) == [], list(base.iterdir())


def test_a_failed_export_keeps_parent_folders_that_existed_or_gained_files(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    (model / "tokenizer.json").write_text("{not json")
    existing = tmp_path / "existing"
    existing.mkdir()
    assert export(model, existing / "out").returncode == 3
    assert existing.is_dir() and list(existing.iterdir()) == []
    assert export(model, existing / "made" / "out").returncode == 3
    assert list(existing.iterdir()) == []


# --- A: one word for success in every --json report ---------------------------


def test_the_json_error_object_says_ok_false(tmp_path):
    r = export(tmp_path / "missing", tmp_path / "out", "--json")
    assert r.returncode == 3
    assert json.loads(r.stdout)["ok"] is False


def test_lint_json_says_ok(tmp_path):
    out = tmp_path / "out"
    assert export(FIXTURE, out).returncode == 0
    r = subprocess.run([str(BIN), "lint", str(out / "model.onnx"), "--json"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] is True and report["errors"] == 0
    assert "pass" not in report and "passed" not in report


# --- C: findings cite hailo-contract.md by a path that exists -----------------


def test_lint_cites_the_contract_by_a_path_that_exists(tmp_path):
    """A graph with a lint finding (a dynamic input): the text ends with the
    contract's path, JSON carries it, and in a build tree it is the source
    tree's docs/hailo-contract.md."""
    onnx = __import__("pytest").importorskip("onnx")
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, [1, "seq", 8])
    y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", 8])
    graph = helper.make_graph([helper.make_node("Identity", ["inputs_embeds"], ["logits"], name="id")], "g", [x], [y])
    path = tmp_path / "dynamic.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))

    text = subprocess.run([str(BIN), "lint", str(path)], capture_output=True, text=True, timeout=120)
    assert text.returncode == 1, text.stderr
    lines = text.stdout.splitlines()
    footer = [line for line in lines if line.startswith("sections cited refer to ")]
    assert len(footer) == 1 and lines[-2] == footer[0], text.stdout  # once, before the verdict
    cited = Path(footer[0][len("sections cited refer to "):])
    assert cited.is_absolute() and cited.is_file(), cited
    assert cited.name == "hailo-contract.md" and "## 2. " in cited.read_text(encoding="utf-8")

    report = json.loads(subprocess.run([str(BIN), "lint", str(path), "--json"], capture_output=True, text=True,
                                       timeout=120).stdout)
    assert report["ok"] is False and Path(report["contract_doc"]) == cited
    if (BIN.parent / "CMakeCache.txt").is_file():  # a build tree: no installed doc beside the binary
        assert cited.resolve() == (REPO / "docs" / "hailo-contract.md").resolve()
