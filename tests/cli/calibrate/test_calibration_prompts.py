"""Issue 40, part 2: calibrate is on the path from export to compile.py, and
its prompts look like what the runtime sees.

* export's next lines, the README's whole-path table, the getting-started
  picture and the quickstart name calibrate before compile.py; calibrate ends
  with the compile.py command, which applies quantization.json by itself;
* --calib-chat / --eval-chat: JSON lines of conversations rendered through the
  exported chat template as genai renders a first turn (bos/eos empty,
  add_generation_prompt true; tests/cli/chat_rendering.py) and tokenized as
  its server tokenizes (no post-processor, so no BOS but the template's);
  a bad line is exit 3 naming FILE:LINE and the field;
* --calib-text keeps the tail of a text as a last, shorter prompt, and a text
  too short for an explicit --calib-size says how much more it needs (exit 3);
* a missing Python package is named alone, with the install command that
  fits that Python (a virtual environment for an externally managed one),
  exit 3 (docs/on-device-check.md gives 3 for a missing hailo_platform).

What the script feeds the runtime-input builder is observed through a
stand-in Python that hands calibrate.py a logging `llm2hef` (the real
binary behind it)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tokenizers

from chat_rendering import genai_first_turn
from llm2hef_cli import BIN, FIXTURES, REPO, llm2hef

CACHE = 64  # gemma3-tiny's window: every conversation below fits, a 200-word one does not

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "user", "content": "Spain?"}, {"role": "assistant", "content": "Madrid."},
     {"role": "user", "content": "Italy?"}],
    [{"role": "user", "content": "Hi!"}],
]


def run(*args, env=None):
    return llm2hef(*args, timeout=600, env=dict(os.environ, **(env or {})))


def export(fixture: str, out: Path, *extra) -> Path:
    r = run("export", FIXTURES / fixture, "-o", out, "--cache", CACHE, "--prefill", 8, "--no-progress", *extra)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def gemma(tmp_path_factory) -> Path:
    """Gemma 3: its template prints the BOS (made literal by export) and a generation prompt."""
    return export("gemma3-tiny", tmp_path_factory.mktemp("gemma") / "out")


def write_lines(path: Path, conversations) -> Path:
    path.write_text("".join((c if isinstance(c, str) else json.dumps(c)) + "\n" for c in conversations),
                    encoding="utf-8")
    return path


def logging_python(tmp: Path) -> tuple[Path, Path]:
    """(a stand-in python3 for --python, the log of every `llm2hef` call calibrate.py makes)."""
    log = tmp / "llm2hef-calls.log"
    logger = tmp / "llm2hef-logger"
    logger.write_text("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> '%s'\nexec '%s' \"$@\"\n" % (log, BIN))
    logger.chmod(0o755)
    python = tmp / "python3"
    python.write_text("#!%s\nimport os, sys\nargs = sys.argv[1:]\nif '--llm2hef' in args:\n"
                      "    args[args.index('--llm2hef') + 1] = %r\n"
                      "os.execv(sys.executable, [sys.executable] + args)\n" % (sys.executable, str(logger)))
    python.chmod(0o755)
    return python, log


def fed_token_lists(log: Path) -> list[list[int]]:
    out = []
    for line in log.read_text().splitlines():
        m = re.search(r"--tokens (\S+)", line)
        if m:
            out.append([int(t) for t in m.group(1).split(",")])
    return out


def runtime_ids(export_dir: Path, conversation) -> list[int]:
    """What genai feeds for this conversation: the stored template rendered as
    it renders a first turn, tokenized by tokenizers without the post-processor."""
    template = json.loads((export_dir / "resources" / "hailo-config.json").read_text())["chat_template"]
    tok = tokenizers.Tokenizer.from_file(str(export_dir / "resources" / "tokenizer.json"))
    return tok.encode(genai_first_turn(template, conversation), add_special_tokens=False).ids


# ------------------------------------------------------------------ the path names calibrate


def test_the_path_names_calibrate_before_compile(gemma, tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "out", "--cache", 16, "--prefill", 4,
            "--no-progress")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    calibrate = next(i for i, line in enumerate(lines) if line.startswith("next: llm2hef calibrate %s" % (
        tmp_path / "out")))
    compile_py = next(i for i, line in enumerate(lines) if line.startswith("then: python") and "compile.py" in line)
    assert calibrate < compile_py and "--calib-chat" in lines[calibrate], r.stdout

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("## The whole path: from"):]
    assert table.index("| 2. calibrate | `llm2hef calibrate OUT") < table.index("| 3. compile | `python OUT/compile.py")
    assert "applies the `quantization.json` calibrate wrote beside it by itself" in table

    dot = (REPO / "docs" / "getting-started.dot").read_text(encoding="utf-8")
    assert "llm2hef calibrate OUT --calib-chat FILE" in dot and "calibrate_cmd -> out1" in dot
    assert "optimize with OUT/quantization.json" in dot  # the picture says compile.py applies it

    quickstart = (REPO / "tools" / "quickstart.sh").read_text(encoding="utf-8")
    done = next(line for line in quickstart.splitlines() if line.startswith('echo "done:'))
    assert done.index("calibrate.py") < done.index("compile.py"), done
    following = next(line for line in quickstart.splitlines() if line.startswith('echo "next:'))
    assert following.index("llm2hef calibrate") < following.index("compile.py"), following


def test_calibrate_ends_with_the_compile_py_command(gemma, tmp_path):
    chats = write_lines(tmp_path / "chats.jsonl", CONVERSATIONS)
    r = run("calibrate", gemma, "--calib-chat", chats, "--no-simulate", "-o", gemma / "quantization.json",
            "--force", env={"LLM2HEF_PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == (
        "next: python %s --calib-chat %s   (on the machine with Hailo's DFC; compile.py applies %s by itself)"
        % (gemma / "compile.py", chats, gemma / "quantization.json")), r.stdout
    # A plan written elsewhere is named with --plan.
    other = tmp_path / "plan.json"
    r = run("calibrate", gemma, "--calib-chat", chats, "--no-simulate", "-o", other,
            env={"LLM2HEF_PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("next: python %s --calib-chat %s --plan %s   "
                                                % (gemma / "compile.py", chats, other)), r.stdout
    assert "applies the plan given with --plan" in r.stdout


# ------------------------------------------------------------------ chat-shaped prompts


def test_chat_prompts_are_the_ids_the_runtime_would_feed(gemma, tmp_path):
    python, log = logging_python(tmp_path)
    chats = write_lines(tmp_path / "chats.jsonl", CONVERSATIONS[:2] + [""] + CONVERSATIONS[2:])  # a blank line
    held = write_lines(tmp_path / "held.jsonl", [[{"role": "user", "content": "Name a colour."}]])
    r = run("calibrate", gemma, "--calib-chat", chats, "--eval-chat", held, "-o", tmp_path / "q.json",
            "--greedy-steps", 1, "--sensitivity-prompts", 1, "--python", python)
    assert r.returncode == 0, r.stdout + r.stderr
    want = [runtime_ids(gemma, c) for c in CONVERSATIONS]
    tok = tokenizers.Tokenizer.from_file(str(gemma / "resources" / "tokenizer.json"))
    bos, model_turn = tok.token_to_id("<bos>"), tok.encode("<start_of_turn>model\n", add_special_tokens=False).ids
    for ids in want:  # the runtime's view: the template's literal BOS first, the generation prompt last
        assert len(ids) <= CACHE and ids[0] == bos and ids.count(bos) == 1 and ids[-len(model_turn):] == model_turn, ids
    fed = fed_token_lists(log)
    for ids in want + [runtime_ids(gemma, [{"role": "user", "content": "Name a colour."}])]:
        assert ids in fed, (ids, fed)
    q = json.loads((tmp_path / "q.json").read_text())
    assert q["calibration"]["format"] == "chat" and q["calibration"]["prompts"] == 3
    assert q["calibration"]["tokens"] == sum(map(len, want)) and q["calibration"]["held_out_prompts"] == 1


def test_a_conversation_longer_than_the_cache_is_left_out_by_line(gemma, tmp_path):
    long = [{"role": "user", "content": "word " * 200}]
    chats = write_lines(tmp_path / "chats.jsonl", [CONVERSATIONS[0], long, CONVERSATIONS[2]])
    r = run("calibrate", gemma, "--calib-chat", chats, "--no-simulate", "-o", tmp_path / "q.json",
            env={"LLM2HEF_PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    assert "1 conversation(s) left out: longer than the cache of %d tokens once rendered (line 2:" % CACHE \
        in r.stderr, r.stderr
    assert json.loads((tmp_path / "q.json").read_text())["calibration"]["prompts"] == 2


REFUSING_TEMPLATE = ("{% if messages[0]['role'] == 'assistant' %}{{ raise_exception('Conversations start with the "
                     "user') }}{% endif %}{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\\n' }}"
                     "{% endfor %}{% if add_generation_prompt %}{{ 'assistant: ' }}{% endif %}")


@pytest.mark.parametrize("line,needle", [
    ('[{"role": "user"}]', "message 1: field 'content' is missing"),
    ('[{"role": "user", "content": "a"}, {"role": 7, "content": "b"}]', "message 2: field 'role' is a number"),
    ('{"role": "user", "content": "a"}', "expected a conversation, a non-empty JSON list of messages"),
    ("[]", "found an empty list"),
    ('["hello"]', "message 1 is a string, not an object"),
    ("[{\"role\": \"user\", \"content\": \"a\"", "not valid JSON"),
    ('[{"role": "assistant", "content": "Hello."}]',
     "refuses it: raise_exception('Conversations start with the user')"),
])
def test_a_bad_chat_line_is_named_with_its_line_and_field(line, needle, tmp_path_factory):
    root = tmp_path_factory.getbasetemp() / "refusing"
    if not (root / "out" / "manifest.json").is_file():
        root.mkdir(exist_ok=True)
        (root / "template.jinja").write_text(REFUSING_TEMPLATE)
        export("llama3-tiny", root / "out", "--chat-template", root / "template.jinja")
    out = root / "out"
    tmp = tmp_path_factory.mktemp("badline")
    chats = write_lines(tmp / "chats.jsonl", [CONVERSATIONS[0], line])
    # Both options read by one rule: the held-out side is checked on the first case only (time).
    for option in ("--calib-chat", "--eval-chat") if "'content' is missing" in needle else ("--calib-chat",):
        prompts = ["--calib-chat", chats] if option == "--calib-chat" else \
            ["--calib-chat", write_lines(tmp / "good.jsonl", CONVERSATIONS), "--eval-chat", chats]
        r = run("calibrate", out, *prompts, "-o", tmp / "q.json", env={"LLM2HEF_PYTHON": sys.executable})
        assert r.returncode == 3, (option, r.returncode, r.stderr)
        assert "%s %s:2: " % (option, chats) in r.stderr and needle in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and not (tmp / "q.json").exists()


# ------------------------------------------------------------------ text


def test_a_text_keeps_its_tail_and_a_short_one_says_how_much_more(gemma, tmp_path):
    text = tmp_path / "corpus.txt"
    tok = tokenizers.Tokenizer.from_file(str(gemma / "resources" / "tokenizer.json"))
    body = "The quick brown fox jumps over the lazy dog. " * 6
    while len(tok.encode(body, add_special_tokens=False).ids) % CACHE == 0:
        body += "Yes. "
    text.write_text(body, encoding="utf-8")
    n = len(tok.encode(body, add_special_tokens=False).ids)
    assert n % CACHE and n // CACHE >= 2
    r = run("calibrate", gemma, "--calib-text", text, "--no-simulate", "-o", tmp_path / "q.json",
            env={"LLM2HEF_PYTHON": sys.executable})
    assert r.returncode == 0, r.stderr
    q = json.loads((tmp_path / "q.json").read_text())["calibration"]
    assert q["prompts"] == n // CACHE + 1 and q["tokens"] == n, (q, n)
    assert "a last one of %d (the tail)" % (n % CACHE) in r.stdout, r.stdout
    # An explicit --calib-size the text cannot give: exit 3 with the tokens it lacks.
    want = n // CACHE + 3
    r = run("calibrate", gemma, "--calib-text", text, "--no-simulate", "-o", tmp_path / "q2.json", "--calib-size",
            want, env={"LLM2HEF_PYTHON": sys.executable})
    assert r.returncode == 3, r.stderr
    assert "gives %d prompt(s) of the %d asked for (--calib-size)" % (n // CACHE + 1, want) in r.stderr, r.stderr
    assert "it needs %d more token(s)" % (want * CACHE - n) in r.stderr, r.stderr
    assert not (tmp_path / "q2.json").exists()


# ------------------------------------------------------------------ the missing-package hint

SITECUSTOMIZE = """import os, sys
for name in os.environ.get("HIDE_MODULES", "").split():
    sys.modules[name] = None  # importlib.util.find_spec() then says it is not there
"""


def python_without(tmp: Path, modules: str) -> tuple[Path, dict]:
    """This test's own Python (a virtual environment, so not externally
    managed) with `modules` made missing."""
    (tmp / "site").mkdir()
    (tmp / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return Path(sys.executable), {"PYTHONPATH": str(tmp / "site"), "HIDE_MODULES": modules}


def test_only_the_missing_packages_are_named_with_pip_for_that_python(gemma, tmp_path):
    python, env = python_without(tmp_path, "onnxruntime jinja2")
    chats = write_lines(tmp_path / "chats.jsonl", CONVERSATIONS)
    r = run("calibrate", gemma, "--calib-chat", chats, "--no-simulate", "-o", tmp_path / "q.json", "--python",
            python, env=env)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "lacks the Python package(s) onnxruntime and jinja2:" in r.stderr, r.stderr
    assert "-m pip install onnxruntime jinja2`" in r.stderr and "numpy" not in r.stderr.split("lacks")[1].split(
        ":")[0], r.stderr
    assert "-m venv" not in r.stderr and "PEP 668" not in r.stderr
    # The same rule for `inputs --text` (it needs tokenizers).
    (tmp_path / "t").mkdir()
    python, env = python_without(tmp_path / "t", "tokenizers")
    r = run("inputs", gemma, "--text", "Hello", "-o", tmp_path / "x.npz", "--python", python, env=env)
    assert r.returncode == 3 and "lacks the Python package(s) tokenizers:" in r.stderr, r.stderr


def test_an_externally_managed_python_gets_a_virtual_environment(gemma, tmp_path):
    system = Path("/usr/bin/python3")
    probe = "import os, sysconfig; print(os.path.isfile(os.path.join(sysconfig.get_path('stdlib'), " \
            "'EXTERNALLY-MANAGED')))"
    if not system.is_file() or subprocess.run([str(system), "-c", probe], capture_output=True,
                                              text=True).stdout.strip() != "True":
        pytest.skip("no externally managed /usr/bin/python3 here (Debian 12's is)")
    missing = [m for m in ("numpy", "onnx", "onnxruntime") if subprocess.run(
        [str(system), "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec(%r) is None)" % m]
    ).returncode]
    if not missing:
        pytest.skip("/usr/bin/python3 has every package calibrate needs")
    r = run("calibrate", gemma, "--calib-tokens", write_lines(tmp_path / "c.json", ["[[1, 2, 3]]"]),
            "--no-simulate", "-o", tmp_path / "q.json", "--python", system)
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert "externally managed (PEP 668)" in r.stderr, r.stderr
    assert "-m venv ~/llm2hef-venv && ~/llm2hef-venv/bin/pip install %s`" % " ".join(missing) in r.stderr, r.stderr
    assert "--python ~/llm2hef-venv/bin/python" in r.stderr
