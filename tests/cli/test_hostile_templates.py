"""Hostile chat templates, special tokens and vocabularies (issue 41).

* A BOS text is put in front of the stored template as a string literal, never
  as template source (item 6).
* The template edits leave alone the template's own variables named
  bos_token / eos_token, and refuse a read that is either, depending on the
  conversation (item 8).
* Template lexing is linear (item 9).

Inputs that used to take minutes run under a 20 s timeout: the bound is the
input's size, not the time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from chat_rendering import CONVERSATIONS, bos_print, genai_first_turn, hailort_probe, render

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
TIMEOUT_S = 300
FAST_S = 20  # for inputs that took minutes before the lexer was made linear
OLMO2 = FIXTURES / "olmo2-tiny"  # its BOS comes from tokenizer_config.json (no post-processor adds one)
MIB = 1 << 20


def run(*args, timeout=TIMEOUT_S):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def export(ckpt: Path, out: Path, *extra, timeout=TIMEOUT_S):
    return run("export", ckpt, "-o", out, "--cache", 16, "--prefill", 4, "--no-progress", *extra, timeout=timeout)


def stored_template(out: Path) -> str:
    return json.loads((out / "resources" / "hailo-config.json").read_text(encoding="utf-8"))["chat_template"]


def with_template(tmp: Path, template: str, name: str = "ckpt") -> Path:
    ckpt = tmp / name
    shutil.copytree(OLMO2, ckpt)
    (ckpt / "chat_template.jinja").write_text(template, encoding="utf-8")
    return ckpt


def special_tokens(ckpt: Path) -> tuple[str, str]:
    tc = json.loads((ckpt / "tokenizer_config.json").read_text(encoding="utf-8"))
    return tc["bos_token"], tc["eos_token"]


# --------------------------------------------------------------------------- item 6: the BOS is a literal


@pytest.mark.parametrize("bos", ["{{ raise_exception('the BOS ran as template code') }}",
                                 "{% for i in range(10**12) %}{% endfor %}<s>",
                                 "it's a \\ \"BOS\"\n{# not a comment #}"])
def test_bos_text_is_printed_as_a_literal(tmp_path, bos):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(OLMO2, ckpt)
    tc = json.loads((ckpt / "tokenizer_config.json").read_text(encoding="utf-8"))
    tc["bos_token"] = bos
    (ckpt / "tokenizer_config.json").write_text(json.dumps(tc), encoding="utf-8")
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    tmpl = stored_template(tmp_path / "out")
    assert tmpl.startswith(bos_print(bos)), tmpl[:200]
    hailort_probe(tmpl)  # loads: nothing in the BOS runs
    for messages in CONVERSATIONS.values():
        assert genai_first_turn(tmpl, messages) == render(tc["chat_template"], messages, add_generation_prompt=True,
                                                          bos_token=bos, eos_token=tc["eos_token"])


# --------------------------------------------------------------------------- item 8: scopes


# Templates whose own variables are named like the special tokens; Hugging Face
# renders the template's variable there, so must the device.
OWN_VARIABLES = {
    "loop variable": "{% for bos_token in messages %}{{ bos_token['role'] + ': ' + bos_token['content'] + '\\n' }}"
                     "{% endfor %}",
    "set target": "{% set eos_token = '\\n' %}{% for m in messages %}{{ m['content'] + eos_token }}{% endfor %}",
    "macro parameter": "{% macro turn(m, eos_token) %}{{ m['content'] + eos_token }}{% endmacro %}"
                       "{% for m in messages %}{{ turn(m, '|') }}{% endfor %}{{ eos_token }}",
    "tuple target": "{% for role, bos_token in [['user', 'x']] %}{{ role + bos_token }}{% endfor %}"
                    "{% for m in messages %}{{ m['content'] }}{% endfor %}",
}


@pytest.mark.parametrize("case", sorted(OWN_VARIABLES))
def test_the_templates_own_variables_named_like_special_tokens_are_left_alone(tmp_path, case):
    template = OWN_VARIABLES[case]
    ckpt = with_template(tmp_path, template)
    bos, eos = special_tokens(ckpt)
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 0, r.stderr
    tmpl = stored_template(tmp_path / "out")
    assert not tmpl.startswith(bos_print(bos)), "the template never reads the BOS"
    for messages in CONVERSATIONS.values():
        assert genai_first_turn(tmpl, messages) == render(template, messages, add_generation_prompt=True,
                                                          bos_token=bos, eos_token=eos)


def test_a_read_that_depends_on_the_conversation_is_refused_with_its_line(tmp_path):
    ckpt = with_template(tmp_path, "{% if messages|length > 1 %}{% set bos_token = '' %}{% endif %}\n"
                                   "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}")
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 4, r.stderr
    assert f"{ckpt / 'chat_template.jinja'}: chat template, line 2, column 4: reads 'bos_token'" in r.stderr
    assert "bound at line 1, column 29" in r.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- item 9: linear lexing, 4 MiB


# Each took minutes before (the lexer re-scanned from every "{%" of a raw body,
# each warning and tojson argument scanned from the start).
SLOW_BEFORE = {
    "raw body of open tags": ("{% raw %}" + "{%}" * 400_000 + "%}{% endraw %}", 4, "'{% raw %}'"),
    "300,000 warnings": ("{{ m|first }}" * 300_000, 0, "uses the filter 'first'"),
    "200,000 chained tojson": ("{{ x" + "|tojson" * 200_000 + " }}", 0, ""),
}


@pytest.mark.parametrize("case", sorted(SLOW_BEFORE))
def test_big_templates_are_lexed_in_linear_time(tmp_path, case):
    template, status, needle = SLOW_BEFORE[case]
    assert len(template.encode()) <= 4 * MIB
    ckpt = with_template(tmp_path, template)
    r = run("inspect", ckpt, "--cache", 16, "--prefill", 4, "--json", timeout=FAST_S)
    report = json.loads(r.stdout)["resources"]
    assert report.get("exit_status", 0) == status, report
    assert needle in json.dumps(report)
    if case == "300,000 warnings":  # one warning, with the count of the other places
        warnings = [c for c in report["changes"] if "filter 'first'" in c]
        assert len(warnings) == 1 and "(and at 299999 more places)" in warnings[0], warnings


