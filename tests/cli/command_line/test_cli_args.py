"""The argument parser (issue 13, item 7): unknown options refused with a
suggestion for near misses, adapter options matched against the adapter that
handles the model, `help COMMAND [SUB]`, and each subcommand's own help.

Expected texts are the ones the commands' help texts and the issue spell out
("unknown option --verbose", "did you mean --cache?"), not copies of output.
"""
from __future__ import annotations

import filecmp
import json
import re

import pytest

from llm2hef_cli import BIN, FIXTURES
from llm2hef_cli import llm2hef as run

GPT2 = FIXTURES / "gpt2-tiny"
LLAMA = FIXTURES / "llama3-tiny"
EXPORT_SIZES = ["--cache", "16", "--prefill", "4"]


def usage_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    for needle in needles:
        assert needle in r.stderr, (needle, r.stderr)
    assert r.stderr.startswith("llm2hef: error: "), r.stderr


# ---------------------------------------------------------------- unknown options

@pytest.mark.parametrize("argv,typed,meant", [
    (["adapters", "--verbos"], "--verbos", "--verbose"),
    (["adapters", "--jsno"], "--jsno", "--json"),
    (["lint", "x.onnx", "--josn"], "--josn", "--json"),
    (["inspect", GPT2, "--cahce", "64"], "--cahce", "--cache"),
    (["inputs", "out", "--tokens", "1", "-o", "x.npz", "--layuot", "device"], "--layuot", "--layout"),
    (["hef", "check", "x.hef", "--manfest", "m.json"], "--manfest", "--manifest"),
    (["har", "fix", "in.har", "-o", "out.har", "--dryrun"], "--dryrun", "--dry-run"),
    (["package", "x.hef", "--manifest", "m.json", "--model", "a", "--forse"], "--forse", "--force"),
    (["registry", "manifest", "lib.so", "--lisence", "MIT", "--maintainer", "me"], "--lisence", "--license"),
])
def test_near_miss_is_refused_with_a_suggestion(argv, typed, meant):
    r = run(*argv)
    usage_error(r, f"unknown option {typed}", f"did you mean {meant}?")


def test_typo_is_reported_before_the_required_option_it_hides(tmp_path):
    # --cahce leaves --cache missing; the typo is the message, not "--cache is required".
    r = run("export", GPT2, "-o", tmp_path / "o", "--cahce", "16", "--prefill", "4")
    usage_error(r, "unknown option --cahce", "did you mean --cache?")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv,unknown", [
    (["adapters", "--frobnicate"], "--frobnicate"),
    (["hef", "inspect", "x.hef", "--verify"], "--verify"),
    (["registry", "verify", "x.json", "--license", "MIT"], "--license"),  # a sibling's option
    (["lint", "x.onnx", "-z"], "-z"),  # -q and -v are every command's (issue 28)
])
def test_unknown_option_without_a_near_miss(argv, unknown):
    r = run(*argv)
    usage_error(r, f"unknown option {unknown} (see llm2hef ")
    assert "did you mean" not in r.stderr


@pytest.mark.parametrize("tail", [["-o", "OUT", *EXPORT_SIZES], ["-o", "OUT"]])
def test_unknown_switch_does_not_swallow_the_next_option(tmp_path, tail):
    # The hand-written parser took `-o` as --verbose's value and then said
    # "export takes one MODEL_DIR" (now MODEL); with or without the other required options
    # the unknown option is what is reported. (--verbose is every command's
    # own option now, issue 28: --chatty plays its part.)
    out = tmp_path / "o"
    r = run("export", GPT2, "--chatty", *[out if a == "OUT" else a for a in tail])
    usage_error(r, "unknown option --chatty")
    assert "takes one MODEL" not in r.stderr
    assert not out.exists()


def test_unknown_command_suggests_the_closest():
    usage_error(run("exprot"), "unknown command 'exprot'", "did you mean export?")
    usage_error(run("har", "fxi", "x.har"), "unknown har command 'fxi'", "did you mean fix?")
    usage_error(run("registry", "publish"), "unknown registry command 'publish'")


def test_extra_positional_is_refused():
    usage_error(run("lint", "a.onnx", "b.onnx"), "unexpected argument 'b.onnx'")
    usage_error(run("hef", "inspect", "a.hef", "b.hef"), "unexpected argument 'b.hef'")


def test_unknown_global_option_suggests_the_closest(tmp_path):
    r = run("--adapter-paths", tmp_path, "adapters")
    usage_error(r, "unknown option --adapter-paths", "did you mean --adapter-path?")


def test_global_option_after_the_command_is_not_global():
    # Global options come before the command (llm2hef --help).
    usage_error(run("adapters", "--allow-unsafe-adapters"), "unknown option --allow-unsafe-adapters")


def test_missing_value_and_bad_integer_are_usage_errors(tmp_path):
    usage_error(run("export", GPT2, "-o", tmp_path / "o", "--prefill", "4", "--cache"), "--cache")
    usage_error(run("export", GPT2, "-o", tmp_path / "o", "--prefill", "4", "--cache", "many"), "--cache")
    usage_error(run("inputs", tmp_path, "--tokens", "1", "-o", tmp_path / "x.npz", "--layout", "nchw"), "--layout")
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- adapter options

def test_adapter_option_typo_suggests_the_declared_option(tmp_path):
    r = run("export", GPT2, "-o", tmp_path / "o", *EXPORT_SIZES, "--gleu", "tanh")
    usage_error(r, "unknown option --gleu", "did you mean --gelu?")


def test_adapter_option_the_resolved_adapter_does_not_declare(tmp_path):
    # gpt2 declares --gelu; the llama adapter, which claims this checkpoint, does not.
    r = run("export", LLAMA, "-o", tmp_path / "o", *EXPORT_SIZES, "--gelu", "tanh")
    usage_error(r, "unknown option --gelu for adapter 'llama'")
    assert not (tmp_path / "o").exists()


def test_adapter_option_bad_choice(tmp_path):
    r = run("export", GPT2, "-o", tmp_path / "o", *EXPORT_SIZES, "--gelu=erf")
    usage_error(r, "--gelu erf", "sigmoid, tanh")
    assert not (tmp_path / "o").exists()


def test_adapter_option_needs_a_value(tmp_path):
    r = run("export", GPT2, "-o", tmp_path / "o", *EXPORT_SIZES, "--gelu")
    usage_error(r, "option --gelu needs a value")


def test_adapter_option_anywhere_and_in_both_spellings(tmp_path):
    # Before MODEL_DIR, after it, and as --gelu=tanh: the same export.
    a, b = tmp_path / "a", tmp_path / "b"
    r = run("export", "--gelu", "tanh", GPT2, "-o", a, *EXPORT_SIZES, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["adapter"]["name"] == "gpt2"
    r = run("export", GPT2, "--gelu=tanh", "-o", b, *EXPORT_SIZES)
    assert r.returncode == 0, r.stderr
    for name in ("model.onnx", "model.onnx.data"):
        assert filecmp.cmp(a / name, b / name, shallow=False), name
    # and tanh is not the default: the sigmoid graph differs
    c = tmp_path / "c"
    assert run("export", GPT2, "-o", c, *EXPORT_SIZES).returncode == 0
    assert not filecmp.cmp(a / "model.onnx", c / "model.onnx", shallow=False)


# ---------------------------------------------------------------- help

GROUPS = {"har": ["inspect", "fix", "lines"], "hef": ["inspect", "check", "set-config"],
          "registry": ["verify", "manifest", "index"]}


@pytest.mark.parametrize("group,sub", [(g, s) for g, subs in GROUPS.items() for s in subs])
def test_each_subcommand_has_its_own_help(group, sub):
    r = run(group, sub, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"Usage: llm2hef {group} {sub} "), r.stdout.splitlines()[0]
    group_help = run(group, "--help")
    assert group_help.returncode == 0 and group_help.stdout.startswith(f"Usage: llm2hef {group} COMMAND")
    assert r.stdout != group_help.stdout
    short = run(group, sub, "-h")
    assert short.returncode == 0 and short.stdout == r.stdout


@pytest.mark.parametrize("topic", [[], ["export"], ["inspect"], ["har"], ["har", "fix"], ["hef", "check"],
                                   ["registry", "verify"], ["registry", "index"], ["help"]])
def test_help_command_prints_the_commands_help(topic):
    r = run("help", *topic)
    assert r.returncode == 0, r.stderr
    assert r.stdout == run(*topic, "--help").stdout
    assert r.stdout.startswith("Usage: llm2hef" if topic else "llm2hef - ")


def test_help_lists_the_help_command():
    assert "help COMMAND [SUB]" in run("--help").stdout


def test_help_for_an_unknown_topic():
    usage_error(run("help", "exprot"), "'exprot'", "did you mean export?")
    usage_error(run("help", "registry", "verfy"), "did you mean verify?")


def test_help_needs_no_other_argument(tmp_path):
    # --help wins over missing required options and positionals.
    r = run("export", "--help")
    assert r.returncode == 0 and "--cache N" in r.stdout
    assert "--gelu" in r.stdout  # adapter options are named in export's help


def test_group_without_subcommand_prints_its_help_on_stderr():
    for group in GROUPS:
        r = run(group)
        assert r.returncode == 2
        assert r.stderr.startswith(f"Usage: llm2hef {group} COMMAND") and r.stdout == ""


def test_version():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("llm2hef ")


# ---------------------------------------------------------------- help rows against the parser

DOCS = BIN.parent / "cli-docs"
# Taken by every command and described once, in `llm2hef --help`.
EVERYWHERE = {"-h", "--help", "-q", "--quiet", "-v", "--verbose"}


def parsed_options() -> dict[tuple[str, ...], set[str]]:
    """Every option the parser takes, per command path, from the bash
    completion the build writes from the command tree itself."""
    script = (DOCS / "bash" / "llm2hef").read_text(encoding="utf-8")
    start = script.index("  options=(")
    table = script[start:script.index("\n  )\n", start)]
    return {tuple(key.split()[1:]): set(value.split())
            for key, value in re.findall(r'\["([^"]+)"\]="([^"]*)"', table)}


def help_rows(text: str) -> set[str]:
    """The option spellings the rows of a help text describe: lines
    `  -o, --output FILE   text` (the label ends at two spaces)."""
    found = set()
    for line in text.splitlines():
        if re.match(r"^  -", line):
            label = line[2:].split("  ")[0]
            found |= set(re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", label))
    return found


def test_every_parsed_option_has_a_help_row_and_every_row_is_parsed():
    # The help rows are generated from the options the parser is given
    # (issue 38): one definition each. Checked on the binary: an option the
    # parser takes must have its row, and a row must name what it takes.
    options = parsed_options()
    assert ("har", "fix") in options and len(options) > 25, sorted(options)
    for path, parsed in options.items():
        r = run("help", *path)
        assert r.returncode == 0, (path, r.stderr)
        rows = help_rows(r.stdout)
        exempt = EVERYWHERE if path else set()
        where = f"llm2hef {' '.join(path)} --help"
        assert parsed - exempt <= rows, f"{where}: parsed but not described: {sorted(parsed - exempt - rows)}"
        assert rows <= parsed, f"{where}: described but not parsed: {sorted(rows - parsed)}"
