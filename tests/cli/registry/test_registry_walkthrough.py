"""docs/registry.md, "Try it locally", run as written: every ```sh block of
that section, in order, in one bash process, in an empty folder with HOME in
a temporary directory (no XDG variables, so the defaults under HOME the text
names are used, and no shipped keys). ADAPTER is the tests/plugins adapter
fake_good, the library the reader would take from the hello example. Then
what the walk-through promises is checked on disk: the key trusted, the
adapter gone again after `uninstall`."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from llm2hef_cli import BIN, REPO
from registry_index_fixture import FAKE_GOOD

DOC = REPO / "docs" / "registry.md"


def walkthrough_blocks() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## Try it locally\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"^```sh\n(.*?)^```$", text[start:end], re.MULTILINE | re.DOTALL)


def test_the_section_covers_the_whole_path():
    script = "\n".join(walkthrough_blocks())
    for step in ("file://", "registry keys generate", "registry sign", "registry keys add", "registry search",
                 "registry install", "registry uninstall", "registry verify", "registry list"):
        assert step in script, f"the walk-through no longer shows {step!r}"


def run_walkthrough(tmp_path: Path, script: str) -> subprocess.CompletedProcess:
    home = tmp_path / "home"
    work = tmp_path / "work"
    shipped = tmp_path / "no-shipped-keys"
    for d in (home, work, shipped):
        d.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("XDG_") and k not in ("LLM2HEF_ADAPTER_PATH", "LLM2HEF_INDEX")}
    env.update(HOME=str(home), PATH=f"{BIN.parent}{os.pathsep}{env.get('PATH', '')}", ADAPTER=str(FAKE_GOOD),
               LLM2HEF_SHIPPED_KEYS_DIR=str(shipped))
    return subprocess.run(["bash", "-e", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_walkthrough_runs_as_written(tmp_path):
    assert FAKE_GOOD.is_file(), "the tests/plugins adapters are not built"
    assert BIN.name == "llm2hef", "the walk-through calls `llm2hef` by name on PATH"
    r = run_walkthrough(tmp_path, "\n".join(walkthrough_blocks()))
    assert r.returncode == 0, f"exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    home = tmp_path / "home"
    # The key the reader trusted, and nothing left installed.
    assert len(list((home / ".config" / "llm2hef" / "trusted-keys").glob("*.pub"))) == 1
    adapters = home / ".local" / "share" / "llm2hef" / "adapters"
    assert adapters.is_dir() and list(adapters.iterdir()) == [], list(adapters.iterdir())
    # What the text says each step shows.
    assert "installed fake_good 1.0.0" in r.stdout
    assert "uninstalled fake_good 1.0.0" in r.stdout
    assert "not trusted" in r.stderr or "untrusted" in r.stderr, r.stderr


def test_a_broken_step_fails_the_walkthrough(tmp_path):
    """The harness must be able to fail: the same blocks without `keys add`
    stop at the search that needs the key."""
    script = "\n".join(walkthrough_blocks()).replace("llm2hef registry keys add try/me.pub\n", "")
    r = run_walkthrough(tmp_path, script)
    assert r.returncode != 0, r.stdout
