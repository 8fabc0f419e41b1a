"""Plugins that end the process loading them (a constructor calling exit(0) or
abort()) are loaded first in a child process: llm2hef names the file, skips it
and carries on, for `adapters` and for `export`.

The libraries are the deliberately broken test plugins built by
tests/plugins/CMakeLists.txt into <build>/tests/plugins/test_adapters_fatal.
"""
from __future__ import annotations

import json
import signal

import pytest

from llm2hef_cli import BIN, FIXTURES, llm2hef

FIXTURE = FIXTURES / "gpt2-tiny"
FATAL = BIN.parent / "tests" / "plugins" / "test_adapters_fatal"
EXITS = FATAL / "constructor_exits.so"
ABORTS = FATAL / "constructor_aborts.so"

pytestmark = pytest.mark.skipif(not EXITS.is_file() or not ABORTS.is_file(),
                                reason=f"test plugins not built in {FATAL}")

EXIT_REASON = "the library ended its process while loading (exit status 0)"
ABORT_REASON = (f"the library killed its process while loading (signal {int(signal.SIGABRT)}, "
                f"{signal.strsignal(signal.SIGABRT)})")


def run(*args):
    return llm2hef(*args, timeout=120)


def test_adapters_verbose_names_and_skips_fatal_plugins():
    r = run("--adapter-path", FATAL, "adapters", "--verbose", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    by_file = {c["file"]: c for c in report["considered"]}
    assert by_file[str(EXITS)]["status"] == "skipped"
    assert by_file[str(EXITS)]["reason"] == EXIT_REASON
    assert by_file[str(ABORTS)]["status"] == "skipped"
    assert by_file[str(ABORTS)]["reason"] == ABORT_REASON
    # The first-party adapters after them in the search order still load.
    assert any(a["name"] == "gpt2" for a in report["adapters"])
    assert all(a["file"] not in (str(EXITS), str(ABORTS)) for a in report["adapters"])
    assert f"warning: adapter {EXITS} skipped: {EXIT_REASON}" in r.stderr
    assert f"warning: adapter {ABORTS} skipped: {ABORT_REASON}" in r.stderr


def test_adapters_text_names_fatal_plugins():
    r = run("--adapter-path", FATAL, "adapters", "--verbose")
    assert r.returncode == 0, r.stderr
    assert str(EXITS) in r.stdout and EXIT_REASON in r.stdout
    assert str(ABORTS) in r.stdout and ABORT_REASON in r.stdout
    assert "gpt2" in r.stdout


def test_export_with_fatal_plugins_exports_and_names_them(tmp_path):
    out = tmp_path / "tiny"
    r = run("--adapter-path", FATAL, "export", FIXTURE, "-o", out, "--cache", 16, "--prefill", 4, "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["adapter"]["name"] == "gpt2"
    assert (out / "manifest.json").is_file()
    assert f"warning: adapter {EXITS} skipped: {EXIT_REASON}" in r.stderr
    assert f"warning: adapter {ABORTS} skipped: {ABORT_REASON}" in r.stderr


@pytest.mark.parametrize("library,why", [(EXITS, "exit status 0"), (ABORTS, "signal 6")])
def test_registry_manifest_names_a_fatal_plugin(tmp_path, library, why):
    r = run("registry", "manifest", library, "--license", "MIT", "--maintainer", "x", "-o", tmp_path / "m.json")
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert library.name in r.stderr and why in r.stderr
    assert not (tmp_path / "m.json").exists()
