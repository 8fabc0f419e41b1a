"""Hostile chat templates, special tokens and vocabularies (issue 41, items 6-10 and 20).

* A BOS text is put in front of the stored template as a string literal, never
  as template source (item 6).
* A checkpoint file that is a link leading out of the checkpoint is refused;
  a Hugging Face cache snapshot, whose files link into ../../blobs, is not
  (item 7).
* The template edits leave alone the template's own variables named
  bos_token / eos_token, and refuse a read that is either, depending on the
  conversation (item 8).
* Template lexing is linear, and a chat template is at most 4 MiB wherever it
  comes from (item 9); a GGUF's must also be UTF-8 (item 20).
* The merges recovered from a SentencePiece GGUF vocabulary are bounded
  (item 10).

Inputs that used to take minutes run under a 20 s timeout: the bound is the
input's size, not the time.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from chat_rendering import CONVERSATIONS, bos_print, genai_first_turn, hailort_probe, render
from llm2hef_cli import FIXTURES, REPO, llm2hef

TIMEOUT_S = 300
FAST_S = 20  # for inputs that took minutes before the lexer and merge recovery were made linear
OLMO2 = FIXTURES / "olmo2-tiny"  # its BOS comes from tokenizer_config.json (no post-processor adds one)
MIB = 1 << 20

gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")


def run(*args, timeout=TIMEOUT_S):
    return llm2hef(*args, timeout=timeout)


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


# --------------------------------------------------------------------------- item 7: links out of the checkpoint


def link_out(ckpt: Path, outside: Path, member: str) -> Path:
    """Moves ckpt/member to `outside` and leaves a symbolic link to it; returns the link."""
    outside.mkdir(exist_ok=True)
    inside = ckpt / member
    moved = outside / inside.name
    shutil.move(str(inside), moved)
    inside.symlink_to(moved)
    return inside


@pytest.mark.parametrize("member", ["chat_template.jinja", "tokenizer_config.json", "tokenizer.json", "config.json",
                                    "model.safetensors"])
def test_a_link_out_of_the_checkpoint_is_refused(tmp_path, member):
    ckpt = with_template(tmp_path, "{% for m in messages %}{{ m['content'] }}{% endfor %}")
    link = link_out(ckpt, tmp_path / "elsewhere", member)
    out = tmp_path / "out"
    r = export(ckpt, out)
    assert r.returncode == 3, r.stderr
    assert f"{link}: a symbolic link to {tmp_path / 'elsewhere' / member}, outside the checkpoint folder" in r.stderr
    assert not out.exists()
    assert run("inspect", ckpt, "--cache", 16, "--prefill", 4).returncode == 3


def test_a_template_folder_linked_out_of_the_checkpoint_is_refused(tmp_path):
    ckpt = with_template(tmp_path, "{{ 'in the checkpoint' }}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "default.jinja").write_text("{{ 'not the checkpoint's' }}", encoding="utf-8")
    (ckpt / "chat_template.jinja").unlink()
    (ckpt / "additional_chat_templates").symlink_to(elsewhere, target_is_directory=True)
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert (f"{ckpt / 'additional_chat_templates' / 'default.jinja'}: behind a symbolic link, leads to "
            f"{elsewhere / 'default.jinja'}") in r.stderr


def test_a_gguf_folders_files_obey_the_same_rule(tmp_path):
    folder = tmp_path / "gguf"
    folder.mkdir()
    made = make_gguf(tmp_path / "made", lambda w: add_gpt2_vocabulary(w))
    shutil.move(str(made), folder / made.name)
    shutil.copy(FIXTURES / "gpt2-tiny" / "tokenizer.json", tmp_path / "tokenizer.json")
    (folder / "tokenizer.json").symlink_to(tmp_path / "tokenizer.json")
    r = export(folder, tmp_path / "out", "--gelu", "tanh")
    assert r.returncode == 3, r.stderr
    assert f"{folder / 'tokenizer.json'}: a symbolic link to {tmp_path / 'tokenizer.json'}" in r.stderr


def test_links_inside_the_checkpoint_and_a_hugging_face_cache_snapshot_are_read(tmp_path):
    plain = with_template(tmp_path, "{% for m in messages %}{{ m['role'] + ': ' + m['content'] }}{% endfor %}")
    # A link that stays inside the folder.
    (plain / "templates").mkdir()
    shutil.move(str(plain / "chat_template.jinja"), plain / "templates" / "chat.jinja")
    (plain / "chat_template.jinja").symlink_to(Path("templates") / "chat.jinja")
    r = export(plain, tmp_path / "plain-out")
    assert r.returncode == 0, r.stderr
    # The Hugging Face cache: every file of the snapshot links to ../../blobs/<hash>.
    repo = tmp_path / "hub" / "models--SomeOrg--Olmo2-Tiny"
    snapshot = repo / "snapshots" / "0123abcd"
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    for i, f in enumerate(sorted(p for p in plain.rglob("*") if p.is_file() and not p.is_symlink())):
        blob = repo / "blobs" / f"blob{i}"
        shutil.copy(f, blob)
        target = snapshot / f.relative_to(plain)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(os.path.relpath(blob, target.parent))
    (snapshot / "chat_template.jinja").symlink_to(Path("templates") / "chat.jinja")
    r = export(snapshot, tmp_path / "hub-out")
    assert r.returncode == 0, r.stderr
    assert stored_template(tmp_path / "hub-out") == stored_template(tmp_path / "plain-out")
    assert "Olmo2-Tiny" in json.loads((tmp_path / "hub-out" / "manifest.json").read_text())["model"]["name"]


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


# Each took over a minute before (the lexer re-scanned from every "{%" of a raw
# body, each warning and tojson argument scanned from the start); under a
# second now, so the timeout leaves room for a sanitizer build.
SLOW_BEFORE = {
    "raw body of open tags": ("{% raw %}" + "{%}" * 400_000 + "%}{% endraw %}", 4, "'{% raw %}'"),
    "150,000 warnings": ("{{ m|first }}" * 150_000, 0, "uses the filter 'first'"),
    "100,000 chained tojson": ("{{ x" + "|tojson" * 100_000 + " }}", 0, ""),
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
    if case == "150,000 warnings":  # one warning, with the count of the other places
        warnings = [c for c in report["changes"] if "filter 'first'" in c]
        assert len(warnings) == 1 and "(and at 149999 more places)" in warnings[0], warnings


def test_a_template_over_4_mib_in_tokenizer_config_is_refused(tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(OLMO2, ckpt)
    tc = json.loads((ckpt / "tokenizer_config.json").read_text(encoding="utf-8"))
    tc["chat_template"] = "x" * (4 * MIB + 1)
    (ckpt / "tokenizer_config.json").write_text(json.dumps(tc), encoding="utf-8")
    r = export(ckpt, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert (f"{ckpt / 'tokenizer_config.json'}: field 'chat_template': 4194305 bytes exceed the limit of 4194304 bytes "
            "(4 MiB) for a chat template") in r.stderr


# --------------------------------------------------------------------------- GGUF metadata (items 9, 10, 20)


def load_module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def make_gguf(out: Path, add_tokenizer) -> Path:
    """gpt2-tiny's weights as a GGUF (make_gguf_fixtures.py), with the tokenizer.* keys `add_tokenizer(writer)` adds."""
    fx = load_module("make_gguf_fixtures", REPO / "tools" / "fixtures" / "make_gguf_fixtures.py")

    class Writer(gguf.GGUFWriter):
        def write_header_to_file(self, *args, **kwargs):
            add_tokenizer(self)
            return super().write_header_to_file(*args, **kwargs)

    real_writer = fx.gguf.GGUFWriter
    fx.gguf.GGUFWriter = Writer
    try:
        return fx.convert(FIXTURES / "gpt2-tiny", out, "F32")
    finally:
        fx.gguf.GGUFWriter = real_writer


def add_gpt2_vocabulary(w, chat_template=None) -> None:
    """gpt2-tiny's byte-level vocabulary as llama.cpp's converter writes it."""
    tok = json.loads((FIXTURES / "gpt2-tiny" / "tokenizer.json").read_text(encoding="utf-8"))
    by_id = {i: t for t, i in tok["model"]["vocab"].items()}
    special = {t["id"] for t in tok["added_tokens"]}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list([by_id[i] for i in range(len(by_id))])
    w.add_token_types([3 if i in special else 1 for i in range(len(by_id))])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]])
    if chat_template is not None:
        w.add_key_value("tokenizer.chat_template", chat_template, gguf.GGUFValueType.STRING)


def add_sentencepiece_vocabulary(w, pieces: list[str]) -> None:
    """A SentencePiece ("llama") vocabulary: <unk>, <s>, </s>, then `pieces`, padded past gpt2-tiny's BOS id 299."""
    pieces = ["<unk>", "<s>", "</s>", *pieces]
    pieces += [f"<pad{i}>" for i in range(max(0, 300 - len(pieces)))]
    w.add_tokenizer_model("llama")
    w.add_token_list(pieces)
    w.add_token_types([2, 3, 3] + [1] * (len(pieces) - 3))
    w.add_token_scores([-float(i) for i in range(len(pieces))])


def export_gguf(path: Path, out: Path, timeout=TIMEOUT_S):
    return run("export", path, "-o", out, "--cache", 32, "--prefill", 8, "--gelu", "tanh", "--no-progress",
               timeout=timeout)


def test_a_gguf_template_over_4_mib_is_refused_naming_the_key(tmp_path):
    made = make_gguf(tmp_path / "made", lambda w: add_gpt2_vocabulary(w, "x" * (4 * MIB + 1)))
    r = export_gguf(made, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert (f"{made}: metadata key 'tokenizer.chat_template': 4194305 bytes exceed the limit of 4194304 bytes "
            "(4 MiB) for a chat template") in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_gguf_template_that_is_not_utf8_is_refused_naming_the_key(tmp_path):
    made = make_gguf(tmp_path / "made", lambda w: add_gpt2_vocabulary(w, b"{{ '\xff\xfe' }}"))
    r = export_gguf(made, tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert f"{made}: metadata key 'tokenizer.chat_template': the chat template is not UTF-8 text" in r.stderr


def test_merges_a_sentencepiece_vocabulary_implies_are_bounded(tmp_path):
    # "a", "aa", ..., "a"*1000: every split of every piece is a merge, 500,000 of
    # them with 330 MB of text (transformers' recovery would build them all).
    made = make_gguf(tmp_path / "made", lambda w: add_sentencepiece_vocabulary(w, ["a" * k for k in range(1, 1001)]))
    r = export_gguf(made, tmp_path / "out", timeout=FAST_S)
    assert r.returncode == 3, r.stderr
    assert f"{made}: metadata key 'tokenizer.ggml.tokens': the merges this SentencePiece vocabulary implies" in r.stderr
    assert "exceed 128 MiB of text (the tokenizer.json limit)" in r.stderr
    assert not (tmp_path / "out").exists()


def test_a_long_sentencepiece_piece_costs_its_length(tmp_path):
    # One 1 MB piece: each of its splits was looked up by copying and hashing both
    # halves anew, time quadratic in its length (a 400 KB piece took 28 s).
    made = make_gguf(tmp_path / "made", lambda w: add_sentencepiece_vocabulary(w, ["a", "b", "ab" * 500_000]))
    r = run("inspect", made, "--json", timeout=FAST_S)
    assert r.returncode == 0, r.stderr
