"""`llm2hef package`: a HEF and its export into hailo-ollama's model store.

The store is read back by `read_store` below, written from hailo-ollama's
public source (hailo-ai/hailo_model_zoo_genai v5.1.1), not from llm2hef:
  - src/library/model/simple_store.cpp: every regular file under
    models/manifests/ is parsed as JSON at startup; its key is
    "<grandparent folder>:<parent folder>"; `hef_h10h` (string) and
    `template_params` with string chat_template, bos_token, eos_token are
    required; generation_params' temperature, top_p, top_k, frequency_penalty
    are optional numbers and stop_tokens an optional list of strings;
  - src/library/model/blob_resource.cpp: the HEF is models/blob/sha256_<hef_h10h>,
    valid when the lowercase hex SHA-256 of the file equals hef_h10h;
  - src/library/controller/controller.cpp: a temperature of 0 turns sampling off;
    stop_tokens are compared with each generated token's text;
  - src/library/dto/DTOs.hpp: details is re-read as ModelInfoDetails.
The HEFs come from tools/fixtures/hef_writer.py around what `llm2hef export`
wrote (as tests/cli/hef/test_hef.py does). Failures must leave the store byte for
byte as it was.
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import hef_writer as hw  # noqa: E402
from chat_rendering import bos_print
from llm2hef_cli import BIN, FIXTURES, llm2hef, sound


def run(*args, env=None):
    return sound(llm2hef(*args, timeout=120, env=env))


# --- an independent hailo-ollama store reader ------------------------------------

def _optional_number(obj, key, where):
    if key in obj and obj[key] is not None:
        assert isinstance(obj[key], (int, float)) and not isinstance(obj[key], bool), f"{where}: {key} not a number"


def read_store(models: Path) -> dict:
    """What hailo-ollama v5.1.1 would load from `models`: {"name:tag": info}."""
    found = {}
    for path in sorted((models / "manifests").rglob("*")):
        if not path.is_file():
            continue
        key = f"{path.parent.parent.name}:{path.parent.name}"
        doc = json.loads(path.read_text(encoding="utf-8"))  # json::parse: any file, any name
        assert isinstance(doc["hef_h10h"], str), path
        tp = doc["template_params"]
        for field in ("chat_template", "bos_token", "eos_token"):
            assert isinstance(tp[field], str), f"{path}: template_params.{field}"
        gp = doc.get("generation_params") or {}
        for field in ("temperature", "top_p", "top_k", "frequency_penalty"):
            _optional_number(gp, field, path)
        stops = gp.get("stop_tokens", [])
        assert isinstance(stops, list) and all(isinstance(s, str) for s in stops), path
        details = doc.get("details")
        if details is not None:
            for field in ("parent_model", "format", "family", "parameter_size", "quantization_level"):
                assert details.get(field) is None or isinstance(details[field], str), f"{path}: details.{field}"
            fam = details.get("families")
            assert fam is None or (isinstance(fam, list) and all(isinstance(f, str) for f in fam))
        blob = models / "blob" / ("sha256_" + doc["hef_h10h"])
        assert blob.is_file(), f"{key}: no blob {blob}"
        assert hashlib.sha256(blob.read_bytes()).hexdigest() == doc["hef_h10h"], f"{key}: blob hash"
        found[key] = {"doc": doc, "blob": blob, "manifest": path}
    return found


def snapshot(root: Path) -> dict:
    """Every folder and file (with its bytes) under root; None when root is absent."""
    if not root.exists():
        return None
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else "<dir>") for p in sorted(root.rglob("*"))}


# --- fixtures ---------------------------------------------------------------------

def export(tmp_path_factory, fixture):
    out = tmp_path_factory.mktemp(fixture) / "export"
    r = run("export", FIXTURES / fixture, "-o", out, "--cache", 64, "--prefill", 16,
            "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


def hef_spec(out: Path, **over):
    return hw.spec_from_export(out, **over)


def write_hef(path: Path, out: Path, **over) -> Path:
    path.write_bytes(hw.genai_hef(**hef_spec(out, **over)))
    return path


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return export(tmp_path_factory, "llama3-tiny")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return export(tmp_path_factory, "gpt2-tiny")


def package(hef, out, store, model, *extra):
    return run("package", hef, "--manifest", out / "manifest.json", "--store", store, "--model", model,
               "--no-progress", *extra)


def added_text(tokenizer: dict, token_id: int):
    return next((t["content"] for t in tokenizer["added_tokens"] if t["id"] == token_id), None)


# --- a store hailo-ollama accepts -----------------------------------------------------

@pytest.mark.parametrize("which", ["llama", "gpt2"])
def test_package_writes_a_store_the_reader_accepts(tmp_path, request, which):
    out = request.getfixturevalue(which)
    hef = write_hef(tmp_path / "model.hef", out)
    store = tmp_path / "models"
    r = package(hef, out, store, "tiny:v1", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)

    models = read_store(store)
    assert list(models) == ["tiny:v1"]
    info = models["tiny:v1"]
    assert info["blob"].read_bytes() == hef.read_bytes()
    assert info["manifest"] == store / "manifests" / "tiny" / "v1" / "manifest.json"
    assert report["sha256"] == hashlib.sha256(hef.read_bytes()).hexdigest() == info["doc"]["hef_h10h"]
    assert report["blob_reused"] is False and report["hef_check"]["ok"] is True

    # Values from what export wrote, looked up here from the files themselves.
    cfg = json.loads((out / "resources" / "hailo-config.json").read_text())
    tok = json.loads((out / "resources" / "tokenizer.json").read_text())
    doc = info["doc"]
    assert doc["template_params"]["chat_template"] == cfg["chat_template"]
    eos = cfg["eos_token_id"] if isinstance(cfg["eos_token_id"], int) else cfg["eos_token_id"][0]
    assert doc["template_params"]["eos_token"] == added_text(tok, eos) != None  # noqa: E711
    stop_ids = cfg["stop_token_id"] if isinstance(cfg["stop_token_id"], list) else [cfg["stop_token_id"]]
    assert doc["generation_params"]["stop_tokens"] == [added_text(tok, i) for i in stop_ids]
    gen = cfg["default_generation_params"]
    if gen["do_sample"]:
        assert doc["generation_params"]["temperature"] == pytest.approx(gen["temperature"])
    else:  # greedy in Hugging Face terms: hailo-ollama samples unless temperature is 0
        assert doc["generation_params"]["temperature"] == 0
    assert doc["generation_params"]["top_p"] == pytest.approx(gen["top_p"])
    assert doc["generation_params"]["top_k"] == gen["top_k"]
    m = json.loads((out / "manifest.json").read_text())
    assert doc["details"]["family"] == m["model"]["model_type"] and doc["details"]["format"] == "hef"
    # Nothing else in the store: no temporary files left behind.
    assert set(snapshot(store)) == {"blob", f"blob/sha256_{doc['hef_h10h']}", "manifests", "manifests/tiny",
                                    "manifests/tiny/v1", "manifests/tiny/v1/manifest.json"}


def test_llama_bos_is_the_post_processors(tmp_path, llama):
    """The exported template already starts with the BOS (printed as a literal); bos_token names the same token."""
    hef = write_hef(tmp_path / "model.hef", llama)
    store = tmp_path / "models"
    assert package(hef, llama, store, "l3").returncode == 0
    doc = read_store(store)["l3:latest"]["doc"]
    tok = json.loads((llama / "resources" / "tokenizer.json").read_text())
    single = [p for p in tok["post_processor"]["processors"] if p["type"] == "TemplateProcessing"][0]["single"]
    bos = single[0]["SpecialToken"]["id"]
    assert doc["template_params"]["bos_token"] == bos
    assert doc["template_params"]["chat_template"].startswith(bos_print(bos))
    assert "bos_token" not in doc["template_params"]["chat_template"]


def test_a_stop_id_without_a_certain_text_is_left_out(tmp_path, gpt2):
    """A plain vocabulary entry is spelled in the tokenizer's encoding, not as the text the server compares."""
    import shutil
    out = tmp_path / "export"
    shutil.copytree(gpt2, out)
    cfg_path = out / "resources" / "hailo-config.json"
    cfg = json.loads(cfg_path.read_text())
    tok = json.loads((out / "resources" / "tokenizer.json").read_text())
    plain = next(i for i in tok["model"]["vocab"].values() if added_text(tok, i) is None)
    cfg["stop_token_id"] = [plain] + list(cfg["stop_token_id"])
    cfg_path.write_text(json.dumps(cfg, indent=1))
    hef = write_hef(tmp_path / "model.hef", out)
    store = tmp_path / "models"
    r = package(hef, out, store, "g:1")
    assert r.returncode == 0, r.stderr
    assert f"stop token id {plain} is not an added token" in r.stderr
    doc = read_store(store)["g:1"]["doc"]
    assert doc["generation_params"]["stop_tokens"] == [added_text(tok, i) for i in cfg["stop_token_id"][1:]]


def test_default_tag_is_latest_and_text_output(tmp_path, gpt2):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    store = tmp_path / "models"
    r = package(hef, gpt2, store, "gpt2-tiny")
    assert r.returncode == 0, r.stderr
    assert "gpt2-tiny:latest" in r.stdout and "restart hailo-ollama" in r.stdout
    assert list(read_store(store)) == ["gpt2-tiny:latest"]


def test_two_models_share_one_blob_and_an_identical_blob_is_reused(tmp_path, gpt2):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    store = tmp_path / "models"
    assert package(hef, gpt2, store, "a:1").returncode == 0
    r = package(hef, gpt2, store, "b:1", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["blob_reused"] is True
    models = read_store(store)
    assert sorted(models) == ["a:1", "b:1"]
    assert models["a:1"]["blob"] == models["b:1"]["blob"]
    assert len(list((store / "blob").iterdir())) == 1


def test_default_store_is_where_hailo_ollama_looks(tmp_path, gpt2):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    data = tmp_path / "xdg-data"
    (data / "hailo-ollama").mkdir(parents=True)
    env = dict(os.environ, XDG_DATA_HOME=str(data), XDG_DATA_DIRS=str(tmp_path / "nowhere"))
    r = run("package", hef, "--manifest", gpt2 / "manifest.json", "--model", "g:1", "--no-progress", env=env)
    assert r.returncode == 0, r.stderr
    assert list(read_store(data / "hailo-ollama" / "models")) == ["g:1"]
    # No hailo-ollama folder anywhere: a usage error naming where it looked.
    empty = tmp_path / "empty"
    empty.mkdir()
    env = dict(os.environ, XDG_DATA_HOME=str(empty), HOME=str(empty), XDG_DATA_DIRS=str(tmp_path / "nowhere"))
    r = run("package", hef, "--manifest", gpt2 / "manifest.json", "--model", "g:1", env=env)
    assert r.returncode == 2 and "--store" in r.stderr and str(empty / "hailo-ollama") in r.stderr


# --- hailo-ollama in Docker ---------------------------------------------------------------
# MZG v5.1.1 docs/USAGE.rst 41-44: `docker run ... -v
# $HOME/.local/share/hailo-ollama/models/blob:/usr/share/hailo-ollama/models/blob`.
# Only blob/ is shared; the container's server reads manifests from its image.

DOCKER_WARNING = "Docker instructions for hailo-ollama"


def test_a_store_with_blobs_but_no_manifests_is_warned_about(tmp_path, gpt2):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    store = tmp_path / "hailo-ollama" / "models"
    (store / "blob").mkdir(parents=True)  # what the user made to mount it
    r = package(hef, gpt2, store, "mine:v1", "--json")
    assert r.returncode == 0, r.stderr
    assert "warning: " in r.stderr and DOCKER_WARNING in r.stderr and "no manifests folder" in r.stderr
    mount = f"-v {store / 'manifests' / 'mine'}:/usr/share/hailo-ollama/models/manifests/mine"
    assert mount in r.stderr, r.stderr
    assert any(mount in w for w in json.loads(r.stdout)["warnings"])
    assert list(read_store(store)) == ["mine:v1"]  # written all the same
    # Docker reads a relative host path as a volume name: the -v line is absolute even for --store a/b.
    (tmp_path / "rel" / "models" / "blob").mkdir(parents=True)
    r = subprocess.run([str(BIN), "package", hef, "--manifest", gpt2 / "manifest.json", "--store",
                        "rel/models", "--model", "other:v1", "--no-progress"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and f"-v {tmp_path / 'rel' / 'models' / 'manifests' / 'other'}:" in r.stderr, r.stderr


def test_a_blob_no_manifest_names_is_warned_about(tmp_path, gpt2, populated):
    """A model pulled through the container: its blob is in the shared folder, its manifest in the image."""
    store, _ = populated
    pulled = store / "blob" / ("sha256_" + "ab" * 32)
    pulled.write_bytes(b"a HEF pulled inside the container")
    hef = write_hef(tmp_path / "second.hef", gpt2, contexts=3)
    r = package(hef, gpt2, store, "second:1")
    assert r.returncode == 0, r.stderr
    assert DOCKER_WARNING in r.stderr and str(pulled) in r.stderr and "named by no manifest" in r.stderr


def test_a_store_whose_manifests_name_its_blobs_is_not_warned_about(tmp_path, gpt2, populated):
    store, _ = populated  # one model packaged into a new store: no warning then either
    hef = write_hef(tmp_path / "second.hef", gpt2, contexts=3)
    r = package(hef, gpt2, store, "second:1")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    fresh = tmp_path / "fresh-models"
    r = package(hef, gpt2, fresh, "x:1", "--json")
    assert r.returncode == 0 and "warning" not in r.stderr and json.loads(r.stdout)["warnings"] == []


# --- refusals leave the store unchanged ------------------------------------------------

@pytest.fixture
def populated(tmp_path, gpt2):
    """A store already holding one model, and its snapshot."""
    hef = write_hef(tmp_path / "first.hef", gpt2)
    store = tmp_path / "models"
    assert package(hef, gpt2, store, "first:1").returncode == 0
    return store, snapshot(store)


def test_missing_hef(tmp_path, gpt2, populated):
    store, before = populated
    r = package(tmp_path / "absent.hef", gpt2, store, "x:1")
    assert r.returncode == 3 and "absent.hef" in r.stderr and "no such file" in r.stderr
    assert snapshot(store) == before


@pytest.mark.parametrize("broken,rule", [(dict(extra_groups=1), "network-groups"),
                                         (dict(drop=("tokenizer.json",)), "resources"),
                                         (dict(theta_len=7), "theta")])
def test_hef_failing_hef_check(tmp_path, gpt2, populated, broken, rule):
    store, before = populated
    hef = write_hef(tmp_path / "bad.hef", gpt2, **broken)
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 1, r.stderr
    assert "hef check" in r.stderr and rule in r.stderr and "not packaged" in r.stderr
    assert snapshot(store) == before


def test_strict_versioning_is_judged_for_the_hailort_given(tmp_path, gpt2, populated):
    """A DFC 5.3 HEF with STRICT_RUNTIME_VERSIONING (35) configures only on HailoRT 5.3
    (hailort hef.cpp 3588-3602): refused for the default 5.2, packaged with --hailort 5.3."""
    store, before = populated
    hef = write_hef(tmp_path / "dfc53.hef", gpt2, sdk=(5, 3, 0))
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 1 and "[strict-version," in r.stderr and "--hailort 5.2" in r.stderr, r.stderr
    assert snapshot(store) == before
    r = package(hef, gpt2, store, "x:1", "--hailort", "5.3", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hef_check"]["derived"]["hailort"] == "5.3"
    assert read_store(store)["x:1"]["blob"].read_bytes() == hef.read_bytes()
    # The same option refuses a 5.2 HEF for a 5.3 device, and bad versions are usage errors.
    r = package(write_hef(tmp_path / "dfc52.hef", gpt2), gpt2, store, "y:1", "--hailort", "5.3")
    assert r.returncode == 1 and "[strict-version," in r.stderr, r.stderr
    for bad in ("five", "5"):
        r = package(hef, gpt2, store, "y:1", "--hailort", bad)
        assert r.returncode == 2 and "--hailort" in r.stderr, r.stderr
    assert "y:1" not in read_store(store)


def test_resource_order_is_only_a_warning_for_hailo_ollama(tmp_path, gpt2):
    """hailo-ollama loads with optimize_memory_on_device left false (a value-initialized
    LLMParams, MZG generation_context.cpp 124; hailort llm.hpp 30, 81), which sends the
    whole file: a HEF whose hailo-config.json follows embeddings.bin serves fine."""
    hef = write_hef(tmp_path / "config-last.hef", gpt2,
                    order=("rope_theta_data.bin", "tokenizer.json", "embeddings.bin", "hailo-config.json"))
    assert run("hef", "check", hef, "--optimize-memory-on-device").returncode == 1
    store = tmp_path / "models"
    r = package(hef, gpt2, store, "x:1", "--json")
    assert r.returncode == 0, r.stderr
    assert "note: hef check warning [resource-order]" in r.stderr
    report = json.loads(r.stdout)
    assert report["hef_check"]["ok"]
    assert [f["severity"] for f in report["hef_check"]["findings"] if f["rule"] == "resource-order"] == ["warning"]
    assert list(read_store(store)) == ["x:1"]


def test_hef_not_matching_the_manifest(tmp_path, gpt2, llama, populated):
    store, before = populated
    m = json.loads((gpt2 / "manifest.json").read_text())
    hef = write_hef(tmp_path / "shards.hef", gpt2, shards=2 * len(m["lm_head_shards"]))
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 1 and "[manifest," in r.stderr and "lm_head_shards" in r.stderr, r.stderr
    # A HEF of another export altogether.
    other = write_hef(tmp_path / "llama.hef", llama)
    r = package(other, gpt2, store, "x:1")
    assert r.returncode == 1 and "[manifest" in r.stderr, r.stderr
    assert "section -" not in r.stderr  # a manifest finding cites no section (issue 28)
    assert snapshot(store) == before


def test_hef_carrying_another_hailo_config(tmp_path, gpt2, populated):
    """Passes hef check, but its chat template is not the export's: the store manifest would lie."""
    store, before = populated
    cfg = json.loads((gpt2 / "resources" / "hailo-config.json").read_text())
    cfg["chat_template"] = "{{ messages[0]['content'] }}"
    hef = write_hef(tmp_path / "other-config.hef", gpt2, config=json.dumps(cfg))
    assert run("hef", "check", hef, "--manifest", gpt2 / "manifest.json").returncode == 0
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 3 and "hailo-config.json differs" in r.stderr, r.stderr
    assert snapshot(store) == before


def test_a_template_hailo_ollamas_older_minja_cannot_render_is_refused(tmp_path, gpt2, populated):
    """hailo-ollama v5.1.1 renders the manifest's template with google/minja ea5fe1b, which does not parse a
    step slice (issue 37, item 1): refused as unsupported, naming the line and the construct, and packaged
    only with --force-template (--force replaces a NAME:TAG)."""
    store, before = populated
    cfg = json.loads((gpt2 / "resources" / "hailo-config.json").read_text())
    cfg["chat_template"] = "{% for m in messages %}{{ m['content'] }}{% endfor %}\n{{ messages[::2]|length }}"
    new = tmp_path / "new-config.json"
    new.write_text(json.dumps(cfg))
    hef = write_hef(tmp_path / "step.hef", gpt2, config=json.dumps(cfg))
    r = package(hef, gpt2, store, "x:1", "--config", new)
    assert r.returncode == 4, r.stderr
    assert "chat_template" in r.stderr and "line 2, column 12: the slice '[::2]'" in r.stderr, r.stderr
    assert "--force-template" in r.stderr
    assert snapshot(store) == before
    r = package(hef, gpt2, store, "x:1", "--config", new, "--force", "--json")
    assert r.returncode == 4, r.stderr  # --force is about NAME:TAG, not the template
    r = package(hef, gpt2, store, "x:1", "--config", new, "--force-template", "--json")
    assert r.returncode == 0, r.stderr
    assert any("[::2]" in n and "--force-template" in n for n in json.loads(r.stdout)["notes"])
    assert read_store(store)["x:1"]["doc"]["template_params"]["chat_template"] == cfg["chat_template"]


def test_existing_tag_needs_force(tmp_path, gpt2, populated):
    store, before = populated
    first_blob = read_store(store)["first:1"]["blob"]
    cfg = json.loads((gpt2 / "resources" / "hailo-config.json").read_text())
    hef = write_hef(tmp_path / "second.hef", gpt2, contexts=3)  # passes check, different bytes
    r = package(hef, gpt2, store, "first:1")
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    assert snapshot(store) == before
    r = package(hef, gpt2, store, "first:1", "--force", "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert result["replaced_hef_h10h"] == first_blob.name.removeprefix("sha256_")
    models = read_store(store)
    assert list(models) == ["first:1"] and models["first:1"]["blob"].read_bytes() == hef.read_bytes()
    assert first_blob.is_file()  # the old blob is kept: another manifest may use it
    assert cfg["chat_template"] == models["first:1"]["doc"]["template_params"]["chat_template"]


def test_a_different_file_at_the_blob_name_is_never_overwritten(tmp_path, gpt2, populated):
    store, _ = populated
    hef = write_hef(tmp_path / "model.hef", gpt2, contexts=4)
    digest = hashlib.sha256(hef.read_bytes()).hexdigest()
    squatter = store / "blob" / f"sha256_{digest}"
    squatter.write_bytes(b"not the HEF")
    before = snapshot(store)
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 3 and squatter.name in r.stderr and "different content" in r.stderr, r.stderr
    assert snapshot(store) == before


def test_a_failure_after_the_blob_was_written_removes_it(tmp_path, gpt2):
    """The manifest cannot be placed (manifests/ is a file): the new blob and blob/ must go again."""
    store = tmp_path / "models"
    store.mkdir()
    (store / "manifests").write_text("not a folder")
    before = snapshot(store)
    hef = write_hef(tmp_path / "model.hef", gpt2)
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 3 and "manifests" in r.stderr, r.stderr
    assert snapshot(store) == before


def test_failure_in_a_new_store_creates_nothing(tmp_path, gpt2):
    store = tmp_path / "fresh" / "models"
    (tmp_path / "fresh").mkdir()
    hef = write_hef(tmp_path / "bad.hef", gpt2, hw_arch=0)
    assert package(hef, gpt2, store, "x:1").returncode == 1
    assert snapshot(store) is None and list((tmp_path / "fresh").iterdir()) == []


def test_store_must_be_the_models_folder(tmp_path, gpt2):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    root = tmp_path / "hailo-ollama"
    (root / "models" / "manifests").mkdir(parents=True)
    before = snapshot(root)
    r = package(hef, gpt2, root, "x:1")
    assert r.returncode == 2 and str(root / "models") in r.stderr, r.stderr
    assert snapshot(root) == before


@pytest.mark.parametrize("model", ["a/b", "../x", "a:b:c", ":1", "a:", ".hidden", "x y"])
def test_model_names_must_be_single_folder_names(tmp_path, gpt2, model):
    hef = write_hef(tmp_path / "model.hef", gpt2)
    store = tmp_path / "models"
    r = package(hef, gpt2, store, model)
    assert r.returncode == 2 and "--model" in r.stderr, r.stderr
    assert not store.exists()


def test_help_and_usage():
    r = run("package", "--help")
    assert r.returncode == 0 and "Usage: llm2hef package" in r.stdout and "hef_h10h" in r.stdout
    assert "package" in run("--help").stdout
    assert run("package").returncode == 2
    assert run("package", "x.hef", "--model", "a").returncode == 2  # no --manifest


# --- interrupted and concurrent runs (issue 30, items 8 and 13) --------------------------

def test_a_killed_runs_leftovers_are_swept_by_the_next_run(tmp_path, gpt2):
    """A copy or manifest a SIGKILLed run left (nobody holds its lock, older than a minute) goes;
    a fresh one may be another run's and stays."""
    store = tmp_path / "models"
    (store / "blob").mkdir(parents=True)
    stale_blob = store / "blob" / (".sha256_" + "ab" * 32 + ".llm2hef-Xy12Zq")
    stale_manifest = store / ".manifest.json.llm2hef-Qw34Er"
    fresh = store / "blob" / (".sha256_" + "cd" * 32 + ".llm2hef-Fr35hh")
    for f in (stale_blob, stale_manifest, fresh):
        f.write_bytes(b"\0" * 4096)
    old = time.time() - 600
    for f in (stale_blob, stale_manifest):
        os.utime(f, (old, old))
    hef = write_hef(tmp_path / "model.hef", gpt2)
    r = package(hef, gpt2, store, "x:1")
    assert r.returncode == 0, r.stderr
    assert not stale_blob.exists() and not stale_manifest.exists() and fresh.exists()
    assert f"{stale_blob}: removed, left by an interrupted run" in r.stderr


def test_concurrent_runs_of_one_hef_under_different_names_all_succeed(tmp_path, gpt2):
    """The blob another run placed meanwhile is the same bytes (its name is their hash): reused."""
    hef = write_hef(tmp_path / "model.hef", gpt2)
    for round_ in range(6):
        store = tmp_path / f"models{round_}"
        store.mkdir()
        procs = [subprocess.Popen([str(BIN), "package", hef, "--manifest", gpt2 / "manifest.json", "--store", store,
                                   "--model", f"m{i}:1", "--no-progress"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for i in range(6)]
        results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        assert all(rc == 0 for rc, _ in results), [err for rc, err in results if rc != 0]
        assert sorted(read_store(store)) == [f"m{i}:1" for i in range(6)]
        blob_name = "sha256_" + hashlib.sha256(hef.read_bytes()).hexdigest()
        assert [p.name for p in (store / "blob").iterdir()] == [blob_name]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_copy_leaves_nothing_in_the_store(tmp_path, gpt2, sig):
    """Ctrl-C or SIGTERM while the HEF is copied into blob/: the hidden copy and the folders this run made go."""
    hef = write_hef(tmp_path / "model.hef", gpt2)
    big = tmp_path / "big.hef"
    with open(big, "wb") as f:  # the HEF, then a long sparse tail of zeros: a copy that takes a while
        f.write(hef.read_bytes())
        f.truncate(hef.stat().st_size + (6 << 30))
    store = tmp_path / "models"
    store.mkdir()
    proc = subprocess.Popen([str(BIN), "package", big, "--manifest", gpt2 / "manifest.json", "--store", store,
                             "--model", "x:1", "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # The 6 GB are hashed before the copy starts: seconds on an idle machine,
        # over a minute on a loaded one (CI with other builds running). The loop
        # ends as soon as the copy starts, so a generous deadline costs nothing.
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            temps = list((store / "blob").glob(".sha256_*.llm2hef-*")) if (store / "blob").exists() else []
            if temps and temps[0].stat().st_size > 0:
                break
            time.sleep(0.02)
        else:
            stderr = proc.stderr.read() if proc.poll() is not None else ""
            pytest.fail(f"the copy never started: {proc.poll()} {stderr}")
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.stderr.close()
    assert proc.returncode == -sig
    assert sorted(p.name for p in store.rglob("*")) == []
