"""Usage errors and help in the user's words (issues 28 and 40): a command typo
reported before the options, conversion errors in the tool's words, the
required and optional arguments of export, inspect's --adapter, an unknown
option listing the matching adapter's options only, an --lm-head-shards that
does not divide with the values that do, a near-miss model path with a
suggestion, `adapters --verbose`, `--version`, and export --help listing every
file an export writes."""
from __future__ import annotations

import json
import shutil

import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


def test_command_typo_before_options_is_reported_first(tmp_path):
    r = run("exprot", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x")
    assert r.returncode == 2
    assert "unknown command 'exprot'" in r.stderr and "did you mean export" in r.stderr
    assert "unknown option" not in r.stderr


def test_conversion_errors_in_the_tools_words(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x", "--cache", "abc")
    assert r.returncode == 2
    assert "Could not convert" not in r.stderr
    assert "--cache: 'abc' is not a whole number (see llm2hef export --help)" in r.stderr
    r = run("inspect", FIXTURES / "qwen2-tiny", "--prefill", "1.5")
    assert r.returncode == 2 and "Could not convert" not in r.stderr
    assert "--prefill: '1.5' is not a whole number" in r.stderr


def test_export_help_shows_cache_and_prefill_optional():
    out = run("export", "--help").stdout
    assert out.splitlines()[0].startswith("Usage: llm2hef export MODEL -o OUT [--cache N] [--prefill P]")


def test_inspect_help_lists_adapter():
    out = run("inspect", "--help").stdout
    assert any(line.strip().startswith("--adapter NAME") for line in out.splitlines())


def test_unknown_option_lists_only_the_matching_adapters_options(tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "o", "--cache", 32, "--fooo", "1")
    assert r.returncode == 2
    assert "options of adapter gpt2" in r.stderr and "--gelu" in r.stderr
    assert "sliding-window" not in r.stderr and "(phi)" not in r.stderr


def test_adapters_verbose_still_lists_every_file():
    assert "considered" in run("adapters", "--verbose").stdout.lower() or \
        "loaded" in run("adapters", "-v").stdout


def test_version_prints_commit_and_sdk_fingerprint():
    r = run("--version")
    assert r.returncode == 0
    assert "(commit " in r.stdout
    assert "abi " in r.stdout and "build fingerprint" in r.stdout and "sdk-" in r.stdout


def test_lm_head_shards_not_dividing_is_a_usage_error_listing_valid_values(tmp_path):
    vocab = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["vocab_size"]
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "o", "--cache", 32, "--lm-head-shards", 3)
    assert r.returncode == 2, r.stderr
    valid = [k for k in range(1, 65) if vocab % k == 0]
    assert "valid values up to 64: " + ", ".join(map(str, valid)) in r.stderr
    assert not (tmp_path / "o").exists()


def test_export_without_arguments_names_both_required_arguments():
    r = run("export")
    assert r.returncode == 2 and "MODEL" in r.stderr and "-o OUT" in r.stderr, r.stderr


def test_export_help_lists_every_file_an_export_writes(tmp_path):
    out = tmp_path / "out"
    assert run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 16, "--prefill", 4, "-q").returncode == 0
    help_text = run("export", "--help").stdout
    assert "GGUF" in help_text
    for p in out.iterdir():
        assert p.name in help_text, p.name
    for p in (out / "resources").iterdir():
        assert p.name in help_text, p.name


@pytest.mark.parametrize("typed", ["gpt2-tinyy", "GPT2-tiny", "gpt-2tiny"])
def test_a_near_miss_path_gets_a_suggestion(tmp_path, typed):
    model = tmp_path / "gpt2-tiny"
    shutil.copytree(FIXTURES / "gpt2-tiny", model)
    for command in (["inspect", tmp_path / typed], ["export", tmp_path / typed, "-o", tmp_path / "out"]):
        r = run(*command)
        assert r.returncode == 3 and f"did you mean {model}?" in r.stderr, r.stderr
    far = run("inspect", tmp_path / "something-else")
    assert far.returncode == 3 and "did you mean" not in far.stderr
