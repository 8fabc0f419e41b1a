"""`registry sign` and `registry keys` on hostile input (issue 41, item 20):
`sign --force` replaces only a signature, never another file, and `keys add`
prints a key's comment with its control bytes escaped."""
from __future__ import annotations

import os

from llm2hef_cli import FIXTURES, REPO, ok
from llm2hef_cli import checked as run

FIXTURE = FIXTURES / "gpt2-tiny"


def test_sign_force_replaces_a_signature_only(tmp_path):
    ok("registry", "keys", "generate", tmp_path / "release")
    index = tmp_path / "index.json"
    index.write_text(ok("registry", "collect", REPO / "registry" / "index").stdout)
    pub = tmp_path / "release.pub"
    before = pub.read_bytes()
    r = run("registry", "sign", index, "--key", tmp_path / "release.key", "-o", pub, "--force")
    assert r.returncode == 2 and "not a signature" in r.stderr, r.stderr
    assert pub.read_bytes() == before
    # A previous signature is still replaced.
    ok("registry", "sign", index, "--key", tmp_path / "release.key")
    ok("registry", "sign", index, "--key", tmp_path / "release.key", "--force")


def test_keys_add_prints_a_comment_without_its_escapes(tmp_path):
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"))
    ok("registry", "keys", "generate", tmp_path / "k", "--comment", "evil\x1b[2J\nfake line", env=env)
    r = ok("registry", "keys", "add", tmp_path / "k.pub", env=env)
    assert "\x1b" not in r.stdout and r.stdout.count("\n") == 1, repr(r.stdout)
    assert "\\x1b" in r.stdout
