"""Commands the docs give, run as written (issue 40): docs/on-device-check.md's
rehearsal of `package` and the check without a chip, and README's "Two
commands" section (how long each takes, who needs the second, and the
--calib-* flags of the next steps export prints)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llm2hef_cli import BIN, FIXTURES, REPO
from llm2hef_cli import llm2hef as run


def test_rehearsal_without_a_chip(tmp_path):
    """The commands of docs/on-device-check.md, "Rehearsing `package` and the
    check without a chip", as written there (paths moved into tmp_path)."""
    pytest.importorskip("onnxruntime")
    doc = (REPO / "docs" / "on-device-check.md").read_text()
    section = doc.split("## Rehearsing `package` and the check without a chip")[1]
    block = section.split("```sh\n")[1].split("```")[0].replace("\\\n", " ")
    import shlex
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [c[0] if c[0] != "PYTHONPATH=tests/standins" else c[1] for c in commands] == \
        ["llm2hef", "python3", "llm2hef", "llm2hef", "python3"], commands
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAILO_STANDIN")}
    for words in commands:
        words = [w.replace("/tmp/", str(tmp_path) + "/") for w in words]
        if words[0].startswith("PYTHONPATH="):
            env["PYTHONPATH"] = str(REPO / words.pop(0).split("=", 1)[1])
        if words[0] == "llm2hef":
            words[0] = str(BIN)
        elif words[0] == "python3":
            words[0] = sys.executable
        words = [str(REPO / w) if w.startswith(("tests/", "tools/")) else w for w in words]
        r = subprocess.run(words, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
        assert r.returncode == 0, (words, r.stdout, r.stderr)
    assert "PASS" in r.stdout, r.stdout
    assert (tmp_path / "rehearse-store" / "manifests" / "rehearse" / "latest" / "manifest.json").is_file()


def test_readme_two_commands_say_how_long_who_needs_tests_and_the_calib_flag_export_prints(tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "out", "--cache", 16, "--prefill", 4)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    next_line = next(line for line in lines if line.startswith("next: "))  # calibrate (issue 40)
    then_line = next(line for line in lines if line.startswith("then: "))  # compile.py
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Two commands")[1].split("\n## ")[0]
    for line, command in ((next_line, "calibrate out/gpt2-tiny"), (then_line, "compile.py")):
        flag = next(w for w in line.split() if w.startswith("--calib-"))
        assert f"{command} {flag} " in section, (line, section)  # the flags export's lines name
    assert "20 minutes" in section and "34" in section, section
    test_line = next(line for line in section.splitlines() if "tools/test.sh" in line)
    assert "contributors only" in test_line, test_line
