"""`llm2hef registry` on the real binary: the first-party index the build
writes, publishing a copy of an adapter, tampering with it, and the schema
file itself checked by an independent validator (python-jsonschema)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from llm2hef_cli import ADAPTER_DIR, BIN, REPO
from llm2hef_cli import llm2hef as run

FIRST_PARTY = [t for t in os.environ.get("LLM2HEF_FIRST_PARTY_ADAPTERS", "").split(",") if t]
SCHEMA = json.loads((REPO / "registry" / "schema" / "adapter-manifest.schema.json").read_text())


@pytest.fixture(scope="module")
def index():
    return json.loads((ADAPTER_DIR / "index.json").read_text())


def test_first_party_index_covers_every_first_party_adapter(index):
    assert FIRST_PARTY, "LLM2HEF_FIRST_PARTY_ADAPTERS is not set (run through ctest)"
    listed = sorted(Path(m["library"]["file"]).stem for m in index["adapters"])
    assert listed == sorted(FIRST_PARTY)


def test_first_party_index_verifies(index):
    r = run("registry", "verify", ADAPTER_DIR / "index.json", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] is True
    assert len(report["manifests"]) == len(index["adapters"])
    for m in report["manifests"]:
        assert [c["check"] for c in m["checks"]] == ["schema", "library", "sha256", "abi", "load", "identity", "claims"]


def test_first_party_manifests_match_the_adapters_report(index):
    adapters = {a["name"]: a for a in json.loads(run("adapters", "--json").stdout)["adapters"]}
    for m in index["adapters"]:
        a = adapters[m["name"]]
        assert ((m["version"], m["architectures"], m["model_types"])
                == (a["version"], a["architectures"], a["model_types"]))


def test_schema_is_valid_draft_2020_12_and_accepts_every_generated_manifest(index):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    for m in index["adapters"]:
        jsonschema.validate(m, SCHEMA, cls=jsonschema.Draft202012Validator)


def published(tmp_path, name="gpt2"):
    lib = tmp_path / f"llm2hef_adapter_{name}.so"
    shutil.copy(ADAPTER_DIR / lib.name, lib)
    manifest = tmp_path / f"llm2hef_adapter_{name}.json"
    r = run("registry", "manifest", lib, "--license", "Apache-2.0", "--maintainer", "Someone <s@example.org>",
            "--homepage", "https://example.org/x", "-o", manifest)
    assert r.returncode == 0, r.stderr
    return lib, manifest


def test_manifest_then_verify(tmp_path):
    lib, manifest = published(tmp_path)
    m = json.loads(manifest.read_text())
    assert m["library"] == {"file": lib.name, "sha256": __import__("hashlib").sha256(lib.read_bytes()).hexdigest(),
                            "size": lib.stat().st_size}
    assert m["license"] == "Apache-2.0" and m["homepage"] == "https://example.org/x"
    r = run("registry", "verify", tmp_path)
    assert r.returncode == 0, r.stdout
    assert r.stdout.startswith("PASS  gpt2")


def test_tampered_library_fails_without_being_loaded(tmp_path):
    lib, manifest = published(tmp_path)
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lib.write_bytes(bytes(data))
    r = run("registry", "verify", manifest, "--json")
    assert r.returncode == 1
    (m,) = json.loads(r.stdout)["manifests"]
    assert [c["check"] for c in m["checks"]] == ["schema", "library", "sha256"]
    assert m["checks"][-1]["ok"] is False
    assert "checksum mismatch" in m["checks"][-1]["detail"]
    assert "it was not loaded" in m["checks"][-1]["detail"]


def test_claims_must_match(tmp_path):
    _, manifest = published(tmp_path, "qwen2")
    m = json.loads(manifest.read_text())
    m["architectures"].append("Qwen2MoeForCausalLM")
    manifest.write_text(json.dumps(m))
    r = run("registry", "verify", manifest)
    assert r.returncode == 1
    assert "FAIL  claims: architectures claimed by the manifest but not by the library: Qwen2MoeForCausalLM" in r.stdout


@pytest.mark.parametrize("mutate, field", [
    (lambda m: m.pop("license"), "license"),
    (lambda m: m["library"].update(sha256="0" * 63), "library.sha256"),
    (lambda m: m.update(sdk_abi=0), "sdk_abi"),
    (lambda m: m.update(unexpected=1), "unexpected"),
    (lambda m: m["library"].update(file="sub/dir.so"), "library.file"),
    (lambda m: m.update(architectures=[]), "architectures"),
])
def test_invalid_manifests_are_refused_by_both_validators(tmp_path, mutate, field):
    _, manifest = published(tmp_path)
    m = json.loads(manifest.read_text())
    mutate(m)
    manifest.write_text(json.dumps(m))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(m, SCHEMA, cls=jsonschema.Draft202012Validator)
    r = run("registry", "verify", manifest)
    assert r.returncode == 1
    assert f"FAIL  schema: field '{field}'" in r.stdout


@pytest.mark.parametrize("items", [
    ["GPT2LMHeadModel"] * 3000,                                   # every pair a duplicate
    [f"Arch{i}" for i in range(40000)] + ["Arch7"],               # one, at the end of a long list
])
def test_unique_items_is_one_linear_check_naming_the_first_repeat(tmp_path, items):
    """A 24 KB list took 3.5 GB and 22 s, one message per duplicate pair (issue 30, item 10)."""
    _, manifest = published(tmp_path)
    m = json.loads(manifest.read_text())
    m["architectures"] = items
    manifest.write_text(json.dumps(m))
    # No wall-clock bound (CI machines are shared): the old check's cost showed as
    # millions of messages, which the count below catches.
    r = subprocess.run([str(BIN), "registry", "verify", manifest], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    first = items.index(items[-1]) if len(set(items)) > 1 else 0
    repeat = len(items) - 1 if len(set(items)) > 1 else 1
    assert r.stdout.count("items must be unique") == 1, r.stdout[:2000]
    assert f"field 'architectures': item {repeat} repeats item {first} (\"{items[repeat]}\")" in r.stdout
    assert len(r.stdout) < 10000


def test_usage_and_bad_input(tmp_path):
    assert run("registry", "--help").returncode == 0
    assert "Usage: llm2hef registry" in run("registry", "--help").stdout
    assert run("registry").returncode == 2
    assert run("registry", "publish").returncode == 2
    r = run("registry", "manifest", ADAPTER_DIR / "llm2hef_adapter_gpt2.so")
    assert r.returncode == 2 and "--license" in r.stderr
    r = run("registry", "verify", tmp_path / "missing.json")
    assert r.returncode == 3 and "missing.json: no such file or folder" in r.stderr
    (tmp_path / "broken.json").write_text("{")
    r = run("registry", "verify", tmp_path / "broken.json")
    assert r.returncode == 3 and "broken.json: not valid JSON" in r.stderr
    r = run("registry", "index", tmp_path, "--license", "MIT", "--maintainer", "x")
    assert r.returncode == 3 and "no adapter library" in r.stderr


def test_conflicting_claims_warn_and_are_recorded(tmp_path):
    # Two of the plugin suite's test adapters both claim ClashForCausalLM.
    test_adapters = BIN.parent / "tests" / "plugins" / "test_adapters"
    model = tmp_path / "clash"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["ClashForCausalLM"]}))
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    (model / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + bytes(4))

    r = run("--adapter-path", test_adapters, "inspect", model, "--json")
    assert "architecture 'ClashForCausalLM' is claimed by more than one adapter; using claim_a" in r.stderr
    assert "pass --adapter NAME to choose another" in r.stderr
    adapter = json.loads(r.stdout)["adapter"]
    assert adapter["name"] == "claim_a"
    assert [a["name"] for a in adapter["passed_over"]] == ["claim_b"]
    assert adapter["warning"] in r.stderr

    chosen = run("--adapter-path", test_adapters, "inspect", model, "--json", "--adapter", "claim_b")
    assert "claimed by more than one adapter" not in chosen.stderr
    assert json.loads(chosen.stdout)["adapter"]["name"] == "claim_b"


# --- where verify looks for the library (docs/registry.md, "Where `verify` looks for the library")


def test_a_manifest_written_in_another_folder_is_verified_with_library(tmp_path):
    """writing-an-adapter.md section 6: the manifest is written away from the
    installed .so. Without --library the library check fails, naming the path
    tried and the way out; with it, every check passes."""
    lib_dir = tmp_path / "prefix" / "lib"
    lib_dir.mkdir(parents=True)
    lib = lib_dir / "llm2hef_adapter_gpt2.so"
    shutil.copy(ADAPTER_DIR / lib.name, lib)
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    manifest = elsewhere / "hello.json"
    r = run("registry", "manifest", lib, "--license", "MIT", "--maintainer", "M <m@example.org>", "-o", manifest)
    assert r.returncode == 0, r.stderr
    assert "--library" in r.stderr and str(lib) in r.stderr, r.stderr  # manifest says how to check it

    r = run("registry", "verify", manifest, "--json")
    assert r.returncode == 1, r.stdout
    (m,) = json.loads(r.stdout)["manifests"]
    assert [c["check"] for c in m["checks"]] == ["schema", "library"]
    assert str(elsewhere / lib.name) in m["checks"][-1]["detail"] and "--library" in m["checks"][-1]["detail"]

    r = run("registry", "verify", manifest, "--library", lib, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    (m,) = json.loads(r.stdout)["manifests"]
    assert m["ok"] and m["library"] == str(lib)


def test_library_is_for_one_manifest_only(tmp_path):
    lib, manifest = published(tmp_path)
    r = run("registry", "verify", tmp_path, "--library", lib)
    assert r.returncode == 2 and "--library" in r.stderr and "folder" in r.stderr, r.stderr
    two = tmp_path / "two.json"
    m = json.loads(manifest.read_text())
    two.write_text(json.dumps({"index_version": 1, "adapters": [m, m]}))
    r = run("registry", "verify", two, "--library", lib)
    assert r.returncode == 2 and "lists 2" in r.stderr, r.stderr
    # An index of one entry is one manifest.
    one = tmp_path / "sub" / "one.json"
    one.parent.mkdir()
    one.write_text(json.dumps({"index_version": 1, "adapters": [m]}))
    assert run("registry", "verify", one, "--library", lib).returncode == 0


def test_the_library_given_is_checked_like_any_other(tmp_path):
    lib, manifest = published(tmp_path)
    other = tmp_path / "other.so"
    shutil.copy(ADAPTER_DIR / "llm2hef_adapter_llama.so", other)
    r = run("registry", "verify", manifest, "--library", other, "--json")
    assert r.returncode == 1
    (m,) = json.loads(r.stdout)["manifests"]
    assert m["checks"][-1]["check"] == "sha256" and not m["checks"][-1]["ok"]


def test_an_index_entry_finds_its_library_by_a_relative_url(tmp_path):
    lib, manifest = published(tmp_path)
    m = json.loads(manifest.read_text())
    index_dir = tmp_path / "index"
    (index_dir / "lib").mkdir(parents=True)
    shutil.move(lib, index_dir / "lib" / lib.name)
    m["library"]["url"] = f"lib/{lib.name}"
    index = index_dir / "index.json"
    index.write_text(json.dumps({"index_version": 1, "adapters": [m]}))
    r = run("registry", "verify", index, "--json")
    assert r.returncode == 0, r.stdout
    assert json.loads(r.stdout)["manifests"][0]["library"] == str(index_dir / "lib" / lib.name)
    # Not beside, and a URL that is not a relative path: named, never fetched.
    m["library"]["url"] = f"https://example.org/{lib.name}"
    index.write_text(json.dumps({"index_version": 1, "adapters": [m]}))
    r = run("registry", "verify", index, "--json")
    assert r.returncode == 1
    detail = json.loads(r.stdout)["manifests"][0]["checks"][-1]["detail"]
    assert "https://example.org" in detail and "--library" in detail
    # A relative URL climbing out of the folder is not followed.
    m["library"]["url"] = f"../index/lib/{lib.name}"
    index.write_text(json.dumps({"index_version": 1, "adapters": [m]}))
    assert run("registry", "verify", index).returncode == 1
