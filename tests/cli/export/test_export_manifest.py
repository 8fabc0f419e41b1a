"""manifest.json: every fixture's export validates against the shipped schema
(registry/schema/export-manifest.schema.json) with an independent validator
(python-jsonschema); llm2hef's reader refuses a damaged one naming the file and
the field; export and inspect plan alike."""
from __future__ import annotations

import json

import jsonschema
import pytest

from llm2hef_cli import FIXTURES, REPO
from llm2hef_cli import llm2hef as run

SCHEMA = json.loads((REPO / "registry" / "schema" / "export-manifest.schema.json").read_text())
MODEL_FIXTURES = sorted(p.name for p in (FIXTURES).iterdir() if (p / "config.json").is_file())


def export(fixture, out):
    r = run("export", FIXTURES / fixture, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 0, r.stderr
    return json.loads((out / "manifest.json").read_text())


def test_schema_is_valid():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("fixture", MODEL_FIXTURES)
def test_every_export_matches_the_schema(fixture, tmp_path):
    m = export(fixture, tmp_path / "out")
    jsonschema.validate(m, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert m["manifest_version"] == 2 and "format_version" not in m
    # The six runtime inputs, in the order and with the suffixes hailo-config names them.
    cfg = json.loads((tmp_path / "out" / "resources" / "hailo-config.json").read_text())
    assert {i["role"]: i["dfc_layer"] for i in m["inputs"]} == cfg["input_layers_names_suffixes"]
    assert [i["dfc_layer"] for i in m["inputs"]] == ["input_layer%d" % k for k in range(1, 7)]
    # LFM2's cost figures have a field of their own; options hold options only.
    assert ("cache_cost" in m) == fixture.startswith("lfm2")
    assert not any(k.startswith(("cache_values", "conv_")) for k in m["options"])


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "tiny"
    export("gpt2-tiny", out)
    return out


@pytest.mark.parametrize("damage,field", [
    (lambda m: m["dims"].pop("heads"), "dims"),
    (lambda m: m["pe_tiles"].update(k="two"), "pe_tiles.k"),
    (lambda m: m.update(lm_head_shards=[0]), "lm_head_shards[0]"),
    (lambda m: m.update(surprise=1), "surprise"),
    (lambda m: m.update(manifest_version=3), "manifest_version"),
])
def test_damaged_manifest_is_refused_naming_the_field(exported, tmp_path, damage, field):
    m = json.loads((exported / "manifest.json").read_text())
    damage(m)
    bad = tmp_path / "manifest.json"
    bad.write_text(json.dumps(m))
    for args in (["har", "lines", exported / "nonexistent.har", "--for", "optimize", "--manifest", bad],
                 ["hef", "check", exported / "model.onnx", "--manifest", bad]):
        r = run(*args)
        assert r.returncode == 3, (args, r.returncode, r.stderr)
        assert str(bad) in r.stderr and field in r.stderr, r.stderr


def test_version_1_manifest_is_still_read(exported, tmp_path):
    m = json.loads((exported / "manifest.json").read_text())
    m["format_version"] = m.pop("manifest_version") - 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(m))
    r = run("har", "lines", exported / "nonexistent.har", "--for", "optimize", "--manifest", old)
    assert "old.json" not in r.stderr, r.stderr  # the manifest was accepted; the HAR is what is missing
    assert "nonexistent.har" in r.stderr


@pytest.mark.parametrize("fixture", ["gpt2-tiny", "lfm2-tiny"])
def test_inspect_plans_as_export_does(fixture, tmp_path):
    m = export(fixture, tmp_path / "out")
    r = run("inspect", FIXTURES / fixture, "--cache", 16, "--prefill", 4, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert (rep["cache_size"], rep["prefill"]) == (m["cache_size"], m["prefill"]) == (16, 4)
    assert rep["dims"] == m["dims"] and rep["lm_head_shards"] == m["lm_head_shards"]
    assert rep["theta_length"] == m["theta_length"]
    if "cache_cost" in m:
        assert rep["memory"]["kv_cache_bytes"] == m["cache_cost"]["values_per_position"] * 16
        assert rep["memory"]["kv_cache_layout"] == m["cache_cost"]["layout"]


def help_kit_paths() -> list[str]:
    """The files `export --help` lists under "writes OUT/": a two-space indent, then the path."""
    text = run("export", "--help").stdout
    block = text[text.index("atomically (nothing is left behind on failure):\n"):].splitlines()[1:]
    paths = []
    for line in block:
        if not line.startswith("  "):
            break
        if line[2] != " ":
            paths.append(line.split()[0])
    return paths


def test_kit_is_one_list_for_help_manifest_and_folder(exported):
    # The kit is stated once (core/export/export_kit.hpp): what an export
    # writes, what its manifest lists and what `export --help` names agree.
    written = sorted(str(p.relative_to(exported)) for p in exported.rglob("*") if p.is_file())
    manifest = json.loads((exported / "manifest.json").read_text())
    assert sorted(manifest["files"]) == written
    assert sorted(help_kit_paths()) == written
