"""Where `export` finds the chat template, and that every resource change is
printed (stderr at export, the report of `inspect`).

transformers saves the chat template as `chat_template.jinja` (named extras as
`additional_chat_templates/<name>.jinja`) and reads those files before
tokenizer_config.json's `chat_template`, which is one template or a list of
{"name", "template"} of which "default" is used (tokenization_utils_base.py).
The fixtures llama3-tf5 and qwen2-tf5 were written by transformers 5
`save_pretrained` (tools/fixtures/recipes/transformers5.py); the other
layouts are built here from them. Expected templates are read from the files,
never copied from our output.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from chat_rendering import bos_print
from llm2hef_cli import FIXTURES, llm2hef

TIMEOUT_S = 300
BOS_VARIABLE = re.compile(r"\bbos_token\b")
TF5 = ["llama3-tf5", "qwen2-tf5"]


def run(*args):
    return llm2hef(*args, timeout=TIMEOUT_S)


def export(folder: Path, out: Path, *extra):
    return run("export", folder, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress", *extra)


def export_ok(folder: Path, out: Path, *extra) -> tuple[dict, dict, str]:
    """(hailo-config.json, manifest.json, stderr) of a successful export."""
    r = export(folder, out, *extra)
    assert r.returncode == 0, r.stderr
    cfg = json.loads((out / "resources" / "hailo-config.json").read_text())
    manifest = json.loads((out / "manifest.json").read_text())
    return cfg, manifest, r.stderr


def printed_changes(stderr: str) -> list[str]:
    """The resource changes export lists on stderr, one "  - " line each."""
    lines = stderr.splitlines()
    if "resource changes (also in manifest.json, resource_changes):" not in lines:
        return []
    start = lines.index("resource changes (also in manifest.json, resource_changes):") + 1
    out = []
    for line in lines[start:]:
        if not line.startswith("  - "):
            break
        out.append(line[4:])
    return out


def copy_fixture(name: str, dst: Path) -> Path:
    shutil.copytree(FIXTURES / name, dst)
    return dst


def drop_template_files(folder: Path) -> None:
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    shutil.rmtree(folder / "additional_chat_templates", ignore_errors=True)


def set_config_template(folder: Path, value) -> None:
    path = folder / "tokenizer_config.json"
    tc = json.loads(path.read_text())
    if value is None:
        tc.pop("chat_template", None)
    else:
        tc["chat_template"] = value
    path.write_text(json.dumps(tc, indent=2))


def fixture_templates(name: str) -> dict[str, str]:
    """The named templates as transformers wrote them to the fixture's files."""
    folder = FIXTURES / name
    out = {"default": (folder / "chat_template.jinja").read_text()}
    extra = folder / "additional_chat_templates"
    if extra.is_dir():
        out.update({p.stem: p.read_text() for p in extra.glob("*.jinja")})
    return out


def plain_concatenation(tmpl: str) -> bool:
    return tmpl == "{% for message in messages %}{{ message['content'] }}{% endfor %}"


# --------------------------------------------------------------------------- transformers 5 checkpoints


@pytest.mark.parametrize("name", TF5)
def test_fixture_is_transformers5_layout(name):
    """Guard the premise: no template in tokenizer_config.json, one in chat_template.jinja,
    config.json with rope_parameters, written by transformers 5."""
    folder = FIXTURES / name
    assert "chat_template" not in json.loads((folder / "tokenizer_config.json").read_text())
    assert (folder / "chat_template.jinja").is_file()
    cfg = json.loads((folder / "config.json").read_text())
    assert cfg["transformers_version"].split(".")[0] == "5" and "rope_parameters" in cfg


@pytest.mark.parametrize("name", TF5)
def test_transformers5_checkpoint_keeps_its_chat_template(tmp_path, name):
    cfg, manifest, stderr = export_ok(FIXTURES / name, tmp_path / "out")
    source = fixture_templates(name)["default"]
    tmpl = cfg["chat_template"]
    assert not plain_concatenation(tmpl)
    tc = json.loads((FIXTURES / name / "tokenizer_config.json").read_text())
    bos = tc.get("bos_token")
    if BOS_VARIABLE.search(source):
        # The runtime defines no bos_token: the BOS, once, printed as a literal at the start.
        assert bos and tmpl.startswith(bos_print(bos)) and tmpl.count(bos) == 1, tmpl[:80]
        assert not BOS_VARIABLE.search(tmpl)
        assert tmpl == bos_print(bos) + source.replace("{{ bos_token }}", "")
    else:
        assert tmpl == source
    # Every change recorded in the manifest was printed on stderr, and the other way round.
    assert printed_changes(stderr) == manifest["resource_changes"]
    assert not any("plain concatenation" in c for c in manifest["resource_changes"])


def test_named_extra_template_is_left_out_and_said(tmp_path):
    templates = fixture_templates("qwen2-tf5")
    assert set(templates) == {"default", "tool_use"}
    cfg, manifest, stderr = export_ok(FIXTURES / "qwen2-tf5", tmp_path / "out")
    assert cfg["chat_template"] == templates["default"] != templates["tool_use"]
    said = [c for c in printed_changes(stderr) if "'tool_use'" in c]
    assert said and "default" in said[0], stderr


# --------------------------------------------------------------------------- tokenizer_config.json forms


def test_list_form_picks_default(tmp_path):
    """tokenizer_config.json's list of named templates (transformers writes it with
    save_jinja_files=False): "default" is used even when it is not the first entry."""
    templates = fixture_templates("qwen2-tf5")
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    drop_template_files(ckpt)
    set_config_template(ckpt, [{"name": "tool_use", "template": templates["tool_use"]},
                               {"name": "default", "template": templates["default"]}])
    cfg, manifest, stderr = export_ok(ckpt, tmp_path / "out")
    assert cfg["chat_template"] == templates["default"]
    assert any("'tool_use'" in c for c in printed_changes(stderr)), stderr


def test_list_without_default_is_refused_naming_the_templates(tmp_path):
    templates = fixture_templates("qwen2-tf5")
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    drop_template_files(ckpt)
    set_config_template(ckpt, [{"name": "tool_use", "template": templates["tool_use"]},
                               {"name": "rag", "template": templates["default"]}])
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "tokenizer_config.json" in r.stderr and "chat_template" in r.stderr
    assert "'tool_use'" in r.stderr and "'rag'" in r.stderr and "'default'" in r.stderr
    assert not (tmp_path / "out").exists()


def test_string_in_tokenizer_config_still_used(tmp_path):
    templates = fixture_templates("qwen2-tf5")
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    drop_template_files(ckpt)
    set_config_template(ckpt, templates["default"])
    cfg, _, stderr = export_ok(ckpt, tmp_path / "out")
    assert cfg["chat_template"] == templates["default"]
    assert printed_changes(stderr) == []


def test_jinja_file_wins_over_tokenizer_config(tmp_path):
    """As in transformers, the .jinja file takes priority; the ignored one is said."""
    templates = fixture_templates("qwen2-tf5")
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    set_config_template(ckpt, templates["tool_use"])
    cfg, _, stderr = export_ok(ckpt, tmp_path / "out")
    assert cfg["chat_template"] == templates["default"]
    assert any("ignored" in c and "tokenizer_config.json" in c for c in printed_changes(stderr)), stderr


def test_extra_templates_without_default_are_refused(tmp_path):
    """additional_chat_templates/ without chat_template.jinja: transformers loads the
    named ones only (no "default") and refuses to choose; so does export."""
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    (ckpt / "chat_template.jinja").unlink()
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "additional_chat_templates" in r.stderr and "'tool_use'" in r.stderr and "'default'" in r.stderr


@pytest.mark.parametrize("content,what", [(b"", "empty"), (b"{{ '\xff\xfe' }}", "UTF-8")])
def test_bad_template_file_is_refused_naming_it(tmp_path, content, what):
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    (ckpt / "chat_template.jinja").write_bytes(content)
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "chat_template.jinja" in r.stderr and what in r.stderr


# --------------------------------------------------------------------------- printed changes


def base_model(tmp_path) -> Path:
    """llama3-tf5 without any chat template: the exporter falls back."""
    ckpt = copy_fixture("llama3-tf5", tmp_path / "ckpt")
    drop_template_files(ckpt)
    return ckpt


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_fallback_is_printed_on_stderr(tmp_path, json_flag):
    ckpt = base_model(tmp_path)
    r = export(ckpt, tmp_path / "out", *json_flag)
    assert r.returncode == 0, r.stderr
    if json_flag:
        json.loads(r.stdout)  # stdout stays a JSON document
    changes = printed_changes(r.stderr)
    assert any("plain concatenation" in c for c in changes), r.stderr
    cfg = json.loads((tmp_path / "out" / "resources" / "hailo-config.json").read_text())
    # The post-processor's BOS is still made literal in front of the plain template.
    bos = json.loads((ckpt / "tokenizer_config.json").read_text())["bos_token"]
    assert cfg["chat_template"].startswith(bos_print(bos))
    assert plain_concatenation(cfg["chat_template"][len(bos_print(bos)):])
    assert any("BOS" in c and bos in c for c in changes), r.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert changes == manifest["resource_changes"]


@pytest.mark.parametrize("name", TF5)
def test_inspect_shows_the_same_changes_as_export(tmp_path, name):
    _, manifest, _ = export_ok(FIXTURES / name, tmp_path / "out")
    r = run("inspect", FIXTURES / name, "--cache", 16, "--prefill", 4, "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)["resources"]
    assert res["chat_template_source"] == "chat_template.jinja"
    assert res["changes"] == manifest["resource_changes"] and res["changes"]
    text = run("inspect", FIXTURES / name, "--cache", 16, "--prefill", 4)
    assert text.returncode == 0, text.stderr
    assert "chat template chat_template.jinja" in text.stdout
    for c in manifest["resource_changes"]:
        assert f"  - {c}\n" in text.stdout, text.stdout


def test_inspect_shows_the_fallback(tmp_path):
    ckpt = base_model(tmp_path)
    rep = json.loads(run("inspect", ckpt, "--cache", 16, "--prefill", 4, "--json").stdout)
    assert rep["resources"]["chat_template_source"] is None
    assert any("plain concatenation" in c for c in rep["resources"]["changes"])
    text = run("inspect", ckpt, "--cache", 16, "--prefill", 4).stdout
    assert "chat template none in the checkpoint" in text and "plain concatenation" in text


def test_inspect_reports_what_would_stop_export(tmp_path):
    ckpt = copy_fixture("qwen2-tf5", tmp_path / "ckpt")
    (ckpt / "chat_template.jinja").unlink()
    r = run("inspect", ckpt, "--cache", 16, "--prefill", 4, "--json")
    assert r.returncode == 3, r.stderr  # what export would exit with (issue 28)
    assert "'default'" in json.loads(r.stdout)["resources"]["error"]
    text = run("inspect", ckpt, "--cache", 16, "--prefill", 4).stdout
    assert "EXPORT WOULD STOP" in text and "additional_chat_templates" in text
