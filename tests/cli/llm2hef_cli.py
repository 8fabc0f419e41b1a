"""The binary under test, the paths every CLI test names, and one way to run it.

Stated once here for the command folders below tests/cli (each test file used
to define its own). LLM2HEF_BIN (ctest sets it) is the binary, else
build/llm2hef; LLM2HEF_BUILD_ADAPTER_DIR the adapters the build wrote, else
the folder beside the binary. tests/cli/conftest.py puts this folder on
sys.path, so a test imports it by bare name.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

CLI_TESTS = Path(__file__).resolve().parent
REPO = CLI_TESTS.parents[1]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
ADAPTER_DIR = Path(os.environ.get("LLM2HEF_BUILD_ADAPTER_DIR", BIN.parent / "adapters"))
FIXTURES = REPO / "tests" / "fixtures"
TOOLS_FIXTURES = REPO / "tools" / "fixtures"


def llm2hef(*args, timeout=300, env=None, cwd=None, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    """The binary on args (each str()-ed), stderr and, by default, stdout captured as text. env replaces the
    environment as subprocess.run's does; the timeout bounds a hang, it measures nothing."""
    return subprocess.run([str(BIN), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, env=env, cwd=cwd)


def sound(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """r, after checking what no input may cause: a crash (a signal shows as a negative status) or an internal
    error (exit 5 is an llm2hef bug, never the answer to bad input)."""
    assert r.returncode >= 0, f"llm2hef died with signal {-r.returncode}: {r.stderr}"
    assert "internal error" not in r.stderr, r.stderr
    return r


def tree_digest(root: Path) -> dict[str, str]:
    """Every regular file under root by relative path -> sha256: compares a folder before and after a run."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def checked(*args, **kw) -> subprocess.CompletedProcess:
    """llm2hef(*args, **kw), sound, and with no Python traceback on stderr: the commands that run Python
    (calibrate, inputs --text) turn its failures into messages too (issue 41, item 20)."""
    r = sound(llm2hef(*args, **kw))
    assert "Traceback" not in r.stderr, r.stderr
    return r


def ok(*args, **kw) -> subprocess.CompletedProcess:
    """checked(*args, **kw) that succeeded."""
    r = checked(*args, **kw)
    assert r.returncode == 0, r.stderr
    return r
