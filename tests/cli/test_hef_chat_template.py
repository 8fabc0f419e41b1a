"""`hef check`, `hef set-config` and `package` judge the HEF's chat template as
hailort loads it (hailo-contract.md section 6, "The load probe";
docs/chat-templates.md): a construct hailort's minja does not parse fails the
load (error; set-config refuses the config), a raise_exception that does not
spare hailort's placeholder message and what minja cannot evaluate are
warnings (whether rendering reaches them depends on the template)."""
from __future__ import annotations

import json
from pathlib import Path

import hef_writer as hw
from test_hef import check_json, new_config_file, refused, rules, run, write_hef

PUBLIC = Path(__file__).resolve().parents[1] / "fixtures" / "chat-templates"


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

    from test_hailort_template import FIXTURES, Case
    folder = tmp_path / "ckpt"
    shutil.copytree(FIXTURES / "gemma2-tiny", folder)
    shutil.copy(PUBLIC / "gemma-2-it.jinja", folder / "chat_template.jinja")
    stored = Case(folder, tmp_path / "out").stored
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
