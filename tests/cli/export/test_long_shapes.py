"""A crafted tensor of a thousand dimensions is refused in one short line, not
a line of a thousand numbers (issue 30, item 17)."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess

from llm2hef_cli import BIN, FIXTURES

FIXTURE = FIXTURES / "gpt2-tiny"


def test_a_thousand_dimension_weight_is_refused_briefly(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(FIXTURE, model)
    path = model / "model.safetensors"
    blob = path.read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
    name = next(k for k in header if k != "__metadata__" and "wte" in k)
    header[name]["shape"] += [1] * 1000  # same element count, so only the rank is wrong
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    for command in (["export", model, "-o", tmp_path / "out", "--cache", 16, "--prefill", 4], ["inspect", model]):
        r = subprocess.run([str(BIN), *map(str, command)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 3, r.stderr
        assert name in r.stderr and "1002 dimensions" in r.stderr
        assert len(r.stderr) < 400, r.stderr
