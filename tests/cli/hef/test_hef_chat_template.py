"""`hef check`, `hef set-config` and `package` judge the HEF's chat template as
hailort loads it (hailo-contract.md section 6, "The load probe";
docs/chat-templates.md): a construct hailort's minja does not parse fails the
load (error; set-config refuses the config), a raise_exception that does not
spare hailort's placeholder message and what minja cannot evaluate are
warnings (whether rendering reaches them depends on the template)."""
from __future__ import annotations

import json

from llm2hef_cli import FIXTURES

# hef_writer through test_hef, which puts tools/fixtures on the path (this file runs alone too).
from test_hef import check_json, hw, new_config_file, refused, rules, run, write_hef

PUBLIC = FIXTURES / "chat-templates"


def stored_template(folder, out) -> str:
    """The chat template export stores in hailo-config.json for the checkpoint in folder."""
    r = run("export", folder, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress")
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr}"
    return json.loads((out / "resources" / "hailo-config.json").read_text(encoding="utf-8"))["chat_template"]


def config_with_template(template: str) -> dict:
    cfg = hw.genai_spec()["config"]
    cfg["chat_template"] = template
    return cfg


def test_hef_whose_template_hailort_cannot_parse_fails_the_check(tmp_path):
    path = write_hef(tmp_path, config=config_with_template("{% raw %}{{ x }}{% endraw %}"))
    report = check_json(path)
    assert not report["ok"]
    assert "chat-template" in rules(report)
    assert any("'{% raw %}'" in f["message"] for f in report["findings"] if f["rule"] == "chat-template")


def test_published_gemma_template_is_warned(tmp_path):
    gemma = (PUBLIC / "gemma-2-it.jinja").read_text(encoding="utf-8")
    report = check_json(write_hef(tmp_path, config=config_with_template(gemma)))
    warned = [f["message"] for f in report["findings"] if f["rule"] == "chat-template-render"]
    assert len(warned) == gemma.count("raise_exception(")
    assert any("Conversation roles must alternate" in m and "'TMP'" in m for m in warned)


def test_template_export_wrote_passes(tmp_path):
    """The template export stores for the same Gemma template: no finding."""
    import shutil

    folder = tmp_path / "ckpt"
    shutil.copytree(FIXTURES / "gemma2-tiny", folder)
    shutil.copy(PUBLIC / "gemma-2-it.jinja", folder / "chat_template.jinja")
    stored = stored_template(folder, tmp_path / "out")
    report = check_json(write_hef(tmp_path, config=config_with_template(stored)))
    assert not {"chat-template", "chat-template-render"} & (rules(report) | rules(report, "warning"))


def test_set_config_refuses_a_template_hailort_cannot_parse(tmp_path):
    src = write_hef(tmp_path)
    cfg = new_config_file(tmp_path, chat_template="{% for m in messages %}{% call x() %}{% endcall %}{% endfor %}")
    refused(tmp_path, src, cfg, "[chat-template, section 6]", "'{% call %}'", "line 1, column 24")


def test_set_config_warns_about_unspared_guards(tmp_path):
    src = write_hef(tmp_path)
    tmpl = "{% if messages[0]['role'] != 'user' %}{{ raise_exception('first must be user') }}{% endif %}x"
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, new_config_file(tmp_path, chat_template=tmpl), "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    assert "first must be user" in r.stderr
    assert "chat-template-render" in [f["rule"] for f in json.loads(r.stdout)["findings"]]


# --- hailo-ollama's older minja (issue 37, item 1) ---------------------------------------

STEP_SLICE = "{% for m in messages %}{{ m['content'] }}{% endfor %}\n{{ messages[::2]|length }}"


def test_what_hailo_ollamas_older_minja_lacks_is_an_error(tmp_path):
    """hailo-ollama v5.1.1 renders the template with google/minja ea5fe1b, which does not parse a step slice:
    every request would fail. An error of its own rule, naming the line and the construct; hailort's own
    minja parses it, so --genai-only (a HEF hailo-ollama never serves) passes."""
    path = write_hef(tmp_path, config=config_with_template(STEP_SLICE))
    report = check_json(path)
    assert not report["ok"]
    found = [f["message"] for f in report["findings"] if f["rule"] == "chat-template-ollama"]
    assert len(found) == 1 and all(f["severity"] == "error" for f in report["findings"]
                                   if f["rule"] == "chat-template-ollama")
    assert "line 2, column 12: the slice '[::2]'" in found[0] and "hailo-ollama" in found[0], found
    assert "chat-template" not in rules(report)  # hailort's minja parses it
    report = check_json(path, "--genai-only")
    assert report["ok"] and "chat-template-ollama" not in rules(report) | rules(report, "warning")


def test_qwen3_template_export_wrote_passes_for_hailo_ollama(tmp_path):
    """The published Qwen3 template fails the rule; the one export stores from it passes."""
    import shutil

    qwen3 = (PUBLIC / "qwen3-instruct-2507.jinja").read_text(encoding="utf-8")
    report = check_json(write_hef(tmp_path, "published.hef", config=config_with_template(qwen3)))
    messages = [f["message"] for f in report["findings"] if f["rule"] == "chat-template-ollama"]
    assert any("[::-1]" in m for m in messages) and any("'startswith'" in m for m in messages), messages
    folder = tmp_path / "ckpt"
    shutil.copytree(FIXTURES / "qwen3-tiny", folder)
    shutil.copy(PUBLIC / "qwen3-instruct-2507.jinja", folder / "chat_template.jinja")
    stored = stored_template(folder, tmp_path / "out")
    report = check_json(write_hef(tmp_path, "stored.hef", config=config_with_template(stored)))
    assert "chat-template-ollama" not in rules(report)


def test_set_config_refuses_what_hailo_ollamas_older_minja_lacks(tmp_path):
    """set-config writes HEFs for `package` (hailo-ollama): such a template is refused as unsupported before
    anything is written, and accepted with --genai-only."""
    src = write_hef(tmp_path)
    cfg = new_config_file(tmp_path, chat_template=STEP_SLICE)
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, cfg, "-o", out)
    assert r.returncode == 4, r.stderr
    assert "[chat-template-ollama, section 6]" in r.stderr and "line 2, column 12: the slice '[::2]'" in r.stderr
    assert "--genai-only" in r.stderr and not out.exists()
    r = run("hef", "set-config", src, cfg, "-o", out, "--genai-only")
    assert r.returncode == 0, r.stderr
    assert check_json(out, "--genai-only")["ok"]
