"""Man pages and shell completions (issue 28): the build writes them
(llm2hef_docgen, into build/cli-docs) from llm2hef's own command tree and
help texts. Checked against the binary itself, found independently of the
generator: every command `llm2hef --help` lists, and every subcommand a
group's help lists that `llm2hef help GROUP SUB` accepts, has a man page whose
text is exactly what `llm2hef help ...` prints, and the bash and zsh
completions offer its subcommands and the options its usage line names."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
DOCS = BIN.parent / "cli-docs"


def help_of(path: tuple[str, ...]) -> subprocess.CompletedProcess:
    args = ["--help"] if not path else ["help", *path]
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=60)


def listed_commands() -> list[tuple[str, ...]]:
    """Every command path, read from the help texts."""
    top = help_of(()).stdout
    block = top[top.index("Commands:"):top.index("\n\n", top.index("Commands:"))]
    found: list[tuple[str, ...]] = [()]
    todo = [(name,) for name in re.findall(r"^  ([a-z][a-z0-9-]*)\s", block, re.MULTILINE)]
    while todo:
        path = todo.pop(0)
        r = help_of(path)
        if r.returncode != 0 or not r.stdout.startswith("Usage: llm2hef " + " ".join(path)):
            continue
        found.append(path)
        if path == ("help",) or len(path) > 2:
            continue
        for word in re.findall(r"^  ([a-z][a-z0-9-]*)\b", r.stdout, re.MULTILINE):
            candidate = path + (word,)
            if candidate not in found and candidate not in todo:
                todo.append(candidate)
    return found


@pytest.fixture(scope="module")
def commands():
    assert (DOCS / "commands.txt").is_file(), f"{DOCS} not generated: build the llm2hef_cli_docs target"
    return listed_commands()


def page_of(path: tuple[str, ...]) -> Path:
    return DOCS / "man" / ("-".join(("llm2hef",) + path) + ".1")


def page_text(page: Path) -> str:
    """The help text a page carries, roff escapes undone."""
    roff = page.read_text(encoding="utf-8")
    body = roff[roff.index("\n.nf\n") + 5:roff.index("\n.fi\n")] + "\n"
    body = re.sub(r"^\\&", "", body, flags=re.MULTILINE)
    return body.replace("\\-", "-").replace("\\e", "\\")


def test_the_help_texts_list_the_commands_we_expect(commands):
    # The reader of the help texts must find the tree, or the checks below check nothing.
    for path in [("export",), ("calibrate",), ("har", "fix"), ("hef", "set-config"), ("registry", "verify"),
                 ("registry", "keys", "generate")]:
        assert path in commands, (path, commands)
    assert len(commands) > 25


def test_every_command_has_a_man_page_with_its_help_text(commands):
    listed = {tuple(line.split()) for line in (DOCS / "commands.txt").read_text().splitlines()}
    for path in commands:
        assert path in listed, f"llm2hef {' '.join(path)} is not in commands.txt"
        page = page_of(path)
        assert page.is_file(), f"no man page for llm2hef {' '.join(path)}: {page}"
        assert page_text(page) == help_of(path).stdout, f"{page.name} differs from llm2hef help {' '.join(path)}"
        head = page.read_text(encoding="utf-8")
        assert re.search(r"^\.TH LLM2HEF\S* 1 ", head, re.MULTILINE) and "\n.SH NAME\n" in head
    # No page for a command that is not there.
    pages = {p.name for p in (DOCS / "man").glob("*.1")}
    assert pages == {page_of(p).name for p in commands}, pages ^ {page_of(p).name for p in commands}


def test_man_renders_a_page(commands):
    if not shutil.which("man"):
        pytest.skip("man is not installed")
    r = subprocess.run(["man", "-l", str(page_of(("har", "fix")))], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100"})
    assert r.returncode == 0, r.stderr
    assert "llm2hef har fix" in r.stdout and "--manifest" in r.stdout


def usage_options(path: tuple[str, ...]) -> set[str]:
    usage = help_of(path).stdout.splitlines()[0]
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-zA-Z0-9-]*)", usage))


def bash_complete(words: list[str]) -> list[str]:
    script = f"""
source {DOCS / 'bash' / 'llm2hef'}
COMP_WORDS=({' '.join(repr(w) for w in words)})
COMP_CWORD={len(words) - 1}
_llm2hef
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    r = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def zsh_complete(words: list[str]) -> list[str]:
    script = f"""
compadd() {{ [[ $1 == -- ]] && shift; print -l -- "$@"; }}
_files() {{ print -- __files__; }}
words=({' '.join(repr(w) for w in words)})
CURRENT={len(words)}
source {DOCS / 'zsh' / '_llm2hef'}
"""
    r = subprocess.run(["zsh", "-f", "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


SHELLS = [pytest.param(bash_complete, id="bash"),
          pytest.param(zsh_complete, id="zsh", marks=pytest.mark.skipif(not shutil.which("zsh"),
                                                                      reason="zsh is not installed"))]


@pytest.mark.parametrize("complete", SHELLS)
def test_completion_offers_every_subcommand_and_usage_option(commands, complete):
    for path in commands:
        if path == ("help",):
            continue
        subs = [p[-1] for p in commands if len(p) == len(path) + 1 and p[:len(path)] == path]
        if subs:
            offered = complete(["llm2hef", *path, ""])
            assert sorted(subs) == sorted(offered), (path, offered)
        wanted = usage_options(path) - {"-h"}
        offered = set(complete(["llm2hef", *path, "-"]))
        assert wanted <= offered, (path, wanted - offered)


@pytest.mark.parametrize("complete", SHELLS)
def test_completion_follows_the_words_typed(complete):
    assert "export" in complete(["llm2hef", "--adapter-path", "some/dir", "e"]) or \
        "export" in complete(["llm2hef", "--adapter-path", "some/dir", ""])
    if complete is zsh_complete:  # after an option that takes a value: files
        assert complete(["llm2hef", "har", "fix", "-o", ""]) == ["__files__"]
    else:
        assert "--manifest" not in complete(["llm2hef", "har", "fix", "-o", ""])
    assert "--manifest" in complete(["llm2hef", "har", "fix", "in.har", "--"])
    assert "fix" not in complete(["llm2hef", "har", "fix", ""])  # an argument now, not a command
    assert "registry" in complete(["llm2hef", "help", ""])
    # A flag takes no value: the word after it is still a command.
    assert sorted(complete(["llm2hef", "--allow-unsafe-adapters", "har", ""])) == ["fix", "inspect", "lines"]
    assert "--hailort" in complete(["llm2hef", "hef", "--help", "check", "--"])
