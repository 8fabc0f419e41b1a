"""-o never names an input of the same command (issue 30, item 1), and a
result lost on standard output is never an exit 0 (item 6).

One rule for every command with -o: the output may not be an input, not
through a symbolic or hard link, and may not lie inside an input folder where
the command reads. Every case runs the real binary with --force and checks
that the input's bytes are unchanged and that the message names the input.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import har_fixtures as hf
import hef_writer as hw
from llm2hef_cli import ADAPTER_DIR, FIXTURES, REPO, llm2hef, sound

FIXTURE = FIXTURES / "gpt2-tiny"


def run(*args, stdout=subprocess.PIPE):
    return sound(llm2hef(*args, stdout=stdout))


def refused(r, *words):
    assert r.returncode == 2, (r.returncode, r.stderr)
    for w in words:
        assert w in r.stderr, (w, r.stderr)


@pytest.fixture()
def signing(tmp_path):
    """A key pair and a valid index to sign."""
    assert run("registry", "keys", "generate", tmp_path / "release").returncode == 0
    index = tmp_path / "index.json"
    r = run("registry", "collect", REPO / "registry" / "index")
    assert r.returncode == 0, r.stderr
    index.write_text(r.stdout)
    return tmp_path / "release.key", tmp_path / "release.pub", index


@pytest.mark.parametrize("which", ["key", "index", "key-symlink", "key-hardlink"])
def test_sign_never_writes_over_its_inputs(signing, tmp_path, which):
    key, _, index = signing
    target = {"key": key, "index": index,
              "key-symlink": tmp_path / "sig-link", "key-hardlink": tmp_path / "sig-hard"}[which]
    if which == "key-symlink":
        target.symlink_to(key)
    if which == "key-hardlink":
        os.link(key, target)
    before = key.read_bytes(), index.read_bytes()
    r = run("registry", "sign", index, "--key", key, "-o", target, "--force")
    refused(r, "is the index" if which == "index" else "is the secret key (--key)")
    assert (key.read_bytes(), index.read_bytes()) == before


def test_sign_still_writes_its_signature(signing):
    key, _, index = signing
    assert run("registry", "sign", index, "--key", key).returncode == 0
    assert Path(str(index) + ".sig").is_file()


def test_manifest_never_writes_over_the_library(tmp_path):
    lib = tmp_path / "llm2hef_adapter_gpt2.so"
    shutil.copy(ADAPTER_DIR / "llm2hef_adapter_gpt2.so", lib)
    before = lib.read_bytes()
    r = run("registry", "manifest", lib, "--license", "MIT", "--maintainer", "me", "-o", lib, "--force")
    refused(r, "is the adapter library", str(lib))
    assert lib.read_bytes() == before


def test_collect_never_writes_over_a_reviewed_entry(tmp_path):
    entries = tmp_path / "index"
    shutil.copytree(REPO / "registry" / "index", entries)
    entry = entries / "hello" / "0.1.0.json"
    before = entry.read_bytes()
    r = run("registry", "collect", entries, "-o", entry, "--force")
    refused(r, "lies inside the entries folder", str(entries))
    assert entry.read_bytes() == before
    # Outside what collect reads (not a .json entry) is allowed.
    assert run("registry", "collect", entries, "-o", entries / "index.txt").returncode == 0


def test_set_config_never_writes_over_the_new_config(tmp_path):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef())
    cfg = tmp_path / "new.json"
    cfg.write_text(json.dumps(hw.genai_spec()["config"]))
    before = cfg.read_bytes()
    r = run("hef", "set-config", hef, cfg, "-o", cfg, "--force")
    refused(r, "is the new config (NEW_CONFIG.json)")
    assert cfg.read_bytes() == before


def test_har_fix_never_writes_over_the_manifest(tmp_path):
    hn, w = hf.parsed_har()
    har = hf.write_har(tmp_path / "tiny.har", "tiny", hn, w)
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps(hf.manifest()))
    before = man.read_bytes()
    r = run("har", "fix", har, "--manifest", man, "-o", man, "--force")
    refused(r, "is the export's manifest (--manifest)")
    assert man.read_bytes() == before


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("inputs") / "out"
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("inside", ["resources/embeddings.npy", "manifest.json"])
def test_inputs_never_writes_over_the_export(exported, inside):
    target = exported / inside
    before = target.read_bytes()
    r = run("inputs", exported, "--tokens", "1,2", "-o", target, "--force")
    refused(r, "lies inside the export folder")
    assert target.read_bytes() == before


def test_inputs_may_write_beside_what_it_reads(exported):
    target = exported / "calibration.npz"
    try:
        assert run("inputs", exported, "--tokens", "1,2", "-o", target).returncode == 0
    finally:
        target.unlink(missing_ok=True)


def test_export_never_replaces_a_folder_holding_its_chat_template(tmp_path, exported):
    out = tmp_path / "out"
    shutil.copytree(exported, out)
    template = out / "my.jinja"
    template.write_text("{{ messages[0]['content'] }}")
    r = run("export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--chat-template", template, "--force")
    refused(r, "contains the chat template (--chat-template)")
    assert template.is_file()


# --- item 6: standard output ---------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["registry", "collect", REPO / "registry" / "index"],
    ["registry", "manifest", ADAPTER_DIR / "llm2hef_adapter_gpt2.so", "--license", "MIT", "--maintainer", "me"],
    ["adapters", "--json"],
], ids=["collect", "manifest", "adapters"])
def test_a_result_lost_on_standard_output_is_exit_3(args):
    with open("/dev/full", "w") as full:
        r = run(*args, stdout=full)
    assert r.returncode == 3, r.stderr
    assert "standard output" in r.stderr


def test_package_never_writes_its_store_manifest_over_the_exports(exported, tmp_path):
    store = tmp_path / "models"
    placed = store / "manifests" / "tiny" / "latest"
    shutil.copytree(exported, placed)  # the export, unpacked where the store manifest of tiny:latest goes
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(**hw.spec_from_export(placed)))
    before = (placed / "manifest.json").read_bytes()
    r = run("package", hef, "--manifest", placed / "manifest.json", "--store", store, "--model", "tiny",
            "--no-progress", "--force")
    refused(r, "is the export's manifest (--manifest)")
    assert (placed / "manifest.json").read_bytes() == before
