"""`package` runs that meet (issue 41, items 5 and 19): three runs on one store
never leave a manifest naming a missing blob, and an interrupt leaves either
the whole package or nothing, empty folders included."""
from __future__ import annotations

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

import hef_writer as hw
from llm2hef_cli import BIN, FIXTURES, ok

FIXTURE = FIXTURES / "gpt2-tiny"


EXPORT = ["--cache", 16, "--prefill", 4, "--no-progress"]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("export") / "gpt2"
    ok("export", FIXTURE, "-o", out, *EXPORT)
    return out


def test_concurrent_package_runs_never_orphan_a_manifest(tmp_path, export_dir):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(**hw.spec_from_export(export_dir)))
    for attempt in range(6):
        store = tmp_path / f"store{attempt}"
        store.mkdir()
        cmd = [str(BIN), "package", str(hef), "--manifest", str(export_dir / "manifest.json"), "--store",
               str(store), "--model", "same:latest", "--no-progress"]
        procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for _ in range(3)]
        codes = [p.wait(timeout=120) for p in procs]
        assert sorted(codes)[0] == 0, codes
        manifest = json.loads((store / "manifests" / "same" / "latest" / "manifest.json").read_text())
        for layer in manifest.get("layers", []) + [manifest.get("config", {})]:
            digest_name = layer.get("digest", "")
            if digest_name:
                assert (store / "blob" / digest_name.replace(":", "_")).is_file(), (codes, digest_name)


def test_an_interrupt_leaves_no_store_folder_behind(tmp_path, export_dir):
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(**hw.spec_from_export(export_dir)))
    rng = random.Random(19)
    for attempt in range(24):
        store = tmp_path / f"store{attempt}"
        p = subprocess.Popen([str(BIN), "package", str(hef), "--manifest", str(export_dir / "manifest.json"),
                              "--store", str(store), "--model", "m:t", "--no-progress"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.0, 0.08))
        p.send_signal(signal.SIGINT)
        p.wait(timeout=60)
        if p.returncode != 0 and store.exists():
            # Interrupted: whatever it made is gone, empty folders and a blob with no manifest included;
            # or the signal came after the commit, and the store holds the whole package.
            left = sorted(str(x.relative_to(store)) for x in store.rglob("*"))
            manifest = store / "manifests" / "m" / "t" / "manifest.json"
            if manifest.is_file():
                # hailo-ollama's manifest names its one blob by hef_h10h (docs/package.md).
                digest = json.loads(manifest.read_text()).get("hef_h10h")
                assert digest and (store / "blob" / f"sha256_{digest}").is_file(), left
            else:
                assert left == [], (attempt, left)
