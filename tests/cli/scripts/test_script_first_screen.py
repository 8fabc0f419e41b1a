"""The first screen of the scripts export writes (issue 28, section 4):
compile.py --help leads with the calibration options and says how much text a
calibration needs, without NumPy's warnings; without the DFC it says where the
DFC comes from; validate_on_device.py's empty-prompt message points to
--prompt."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


@pytest.fixture(scope="module")
def small_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--prefill", 8, "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def compile_py(export, *args, env=None):
    return subprocess.run([sys.executable, str(export / "compile.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)


def test_compile_py_help(small_export):
    r = compile_py(small_export, "--help")
    assert r.returncode == 0, r.stderr
    assert "NPY_PROMOTION_STATE" not in r.stderr  # NumPy >= 2.2 warned on the first line
    assert r.stderr == ""
    options = r.stdout[r.stdout.index("options:"):]
    first = [line.split()[0] for line in options.splitlines()[1:] if line.startswith("  -")]
    assert first[:4] == ["-h,", "--calib-chat", "--calib-text", "--calib-tokens"], first
    # How much text a calibration needs: (64 samples + 4 held out) x 32 tokens.
    flat = " ".join(options.split())
    assert "%d tokens" % ((64 + 4) * 32) in flat and "KB of English text" in flat
    for opt in ("--hw-arch HW_ARCH", "-o OUTPUT, --output OUTPUT"):
        line = next(i for i, option_line in enumerate(options.splitlines()) if option_line.strip().startswith(opt))
        following = options.splitlines()[line].strip()[len(opt):].strip() or options.splitlines()[line + 1].strip()
        assert following and not following.startswith("-"), (opt, following)


def test_compile_py_without_the_dfc_says_where_it_comes_from(small_export, tmp_path):
    import importlib.util
    if importlib.util.find_spec("hailo_sdk_client") is not None:
        pytest.skip("this Python has the DFC")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Some text to calibrate on. " * 200)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    r = compile_py(small_export, "--calib-text", corpus, "--work", tmp_path / "work", env=env)
    assert r.returncode != 0
    assert "hailo_sdk_client" in r.stderr and "is not installed" in r.stderr
    assert "Developer Zone" in r.stderr and ".whl" in r.stderr
    assert "NPY_PROMOTION_STATE" not in r.stderr.splitlines()[0]


def test_validate_on_device_empty_prompt_points_to_prompt(small_export):
    text = (small_export / "validate_on_device.py").read_text()
    line = next(each for each in text.splitlines() if "tokenizes to nothing" in each)
    assert "--prompt" in line
