"""`llm2hef inputs` (issue 28, section 4): it prints what it wrote, takes
--text as well as --tokens (the same arrays), keeps stdout quiet under -q
(compile.py calls it once per sample), and a missing Python for --text is
exit 3 naming --tokens, as for calibrate."""
from __future__ import annotations

import numpy as np
import pytest

from llm2hef_cli import FIXTURES
from llm2hef_cli import llm2hef as run


@pytest.fixture(scope="module")
def small_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--prefill", 8, "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def test_inputs_prints_what_it_wrote_and_takes_text(tmp_path, small_export):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer
    text = "Hello world, calibrate me"
    ids = Tokenizer.from_file(str(small_export / "resources" / "tokenizer.json")).encode(
        text, add_special_tokens=False).ids
    by_ids = tmp_path / "ids.npz"
    r = run("inputs", small_export, "--tokens", ",".join(map(str, ids)), "-o", by_ids)
    assert r.returncode == 0, r.stderr
    assert "wrote %s" % by_ids in r.stdout and "%d token(s)" % len(ids) in r.stdout
    by_text = tmp_path / "text.npz"
    r = run("inputs", small_export, "--text", text, "-o", by_text)
    assert r.returncode == 0, r.stderr
    assert "wrote %s" % by_text in r.stdout
    a, b = np.load(by_ids), np.load(by_text)
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert np.array_equal(a[k], b[k]), k
    # -q keeps stdout quiet (compile.py calls it once per sample).
    assert run("inputs", "-q", small_export, "--tokens", "1,2", "-o", tmp_path / "q.npz").stdout == ""
    r = run("inputs", small_export, "--text", text, "--python", tmp_path / "no-python", "-o", tmp_path / "x.npz")
    assert r.returncode == 3 and "--tokens" in r.stderr  # a missing Python is exit 3, as for calibrate
