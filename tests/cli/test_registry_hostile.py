"""Hostile inputs against the registry client on the real binary (issue 30,
items 7, 8, 9, 12, 15, 16): special files given as file:// URLs, a trust
store anyone can write to, Ctrl-C during an install, leftovers of a killed
install, folders a failed install created, a trusted-keys path that is a file,
and the leniencies of index and key parsing. Each test runs `llm2hef` in a
clean HOME (registry_index_fixture.CleanHost)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest

from registry_index_fixture import BIN, FAKE_GOOD, CleanHost, Server, entry_for, write_index


@pytest.fixture
def host(tmp_path):
    assert FAKE_GOOD.is_file(), "the tests/plugins adapters are not built"
    return CleanHost(tmp_path)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def published(host, name="index", url="lib/fake_good.so", **changes):
    folder = host.tmp / name
    (folder / "lib").mkdir(parents=True)
    shutil.copy(FAKE_GOOD, folder / "lib" / "fake_good.so")
    entry = entry_for(host, folder / "lib" / "fake_good.so", url, **changes)
    write_index(host, folder, [entry], host.new_key(f"{name}-key"))
    return folder, entry


def run_with_deadline(host, *args, seconds=20):
    """The command, killed after `seconds` (a hang is a failure, not a stuck suite)."""
    try:
        return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=seconds,
                              env=host.env)
    except subprocess.TimeoutExpired:
        pytest.fail(f"llm2hef {' '.join(map(str, args))} hung for {seconds} s")


# --- item 7: special files behind file:// URLs -------------------------------------------------

@pytest.mark.parametrize("which", ["index.json", "index.json.sig", "lib/fake_good.so"])
def test_a_fifo_behind_a_file_url_is_refused_not_read(host, which):
    folder, _ = published(host)
    target = folder / which
    target.unlink()
    os.mkfifo(target)
    r = run_with_deadline(host, "registry", "install", "fake_good", "--index", folder)
    assert r.returncode in (1, 3), r.stderr
    assert str(target) in r.stderr and "not a regular file (a FIFO)" in r.stderr, r.stderr
    assert not host.adapter_dir.exists() or list(host.adapter_dir.iterdir()) == []


def test_a_device_as_library_url_is_refused(host):
    folder, _ = published(host, url="file:///dev/zero")
    r = run_with_deadline(host, "registry", "install", "fake_good", "--index", folder)
    assert r.returncode == 3, r.stderr
    assert "/dev/zero is not a regular file (a device)" in r.stderr
