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

from llm2hef_cli import BIN
from registry_index_fixture import FAKE_GOOD, CleanHost, Server, entry_for, write_index


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


# --- item 9: a trust store anyone can write to -------------------------------------------------

def trusted_store(host):
    return host.config / "llm2hef" / "trusted-keys"


@pytest.mark.parametrize("what", ["user folder", "user key", "shipped folder", "shipped key"])
def test_a_world_writable_trust_store_is_refused_naming_the_path_and_the_fix(host, what):
    folder, _ = published(host)
    if what.startswith("shipped"):
        # The same key moved to the shipped folder.
        for pub in trusted_store(host).glob("*.pub"):
            shutil.move(pub, host.shipped / pub.name)
    base = host.shipped if what.startswith("shipped") else trusted_store(host)
    path = base if what.endswith("folder") else next(base.glob("*.pub"))
    path.chmod(path.stat().st_mode | 0o002)
    for args in (["registry", "install", "fake_good", "--index", folder], ["registry", "keys", "list"]):
        r = host.run(*args)
        assert r.returncode == 3, f"{args}: exit {r.returncode}\n{r.stderr}"
        assert f"{path}: " in r.stderr and "writable by every user" in r.stderr and f"chmod o-w {path}" in r.stderr
    assert not host.adapter_dir.exists()


def test_a_sticky_world_writable_store_is_refused_too(host):
    host.new_key("k")
    store = trusted_store(host)
    store.chmod(0o1777)
    r = host.run("registry", "keys", "list")
    assert r.returncode == 3 and "writable by every user" in r.stderr


@pytest.mark.parametrize("mode, who", [(0o640, "its group"), (0o644, "every user")])
def test_sign_warns_when_the_secret_key_is_readable_by_others(host, mode, who):
    key = host.new_key("k")
    index = write_index(host, host.tmp / "idx", [], None)
    r = host.ok("registry", "sign", index, "--key", key, "--force")
    assert "readable" not in r.stderr
    key.chmod(mode)
    r = host.ok("registry", "sign", index, "--key", key, "--force")
    assert f"{key}: the secret key is readable by {who}" in r.stderr and f"chmod 600 {key}" in r.stderr


# --- item 8: Ctrl-C and SIGTERM during an install; leftovers of a killed one --------------------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_download_leaves_nothing(host, server, sig):
    folder, _ = published(host, url="PLACEHOLDER")
    data = FAKE_GOOD.read_bytes()
    release = threading.Event()

    def stall(h):  # half the library, then nothing until the test ends
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data[: len(data) // 2])
        h.wfile.flush()
        release.wait(60)

    server.routes["/fake_good.so"] = stall
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    write_index(host, folder, [entry], host.tmp / "index-key.key")
    proc = subprocess.Popen([str(BIN), "registry", "install", "fake_good", "--index", str(folder)], env=host.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            temps = list(host.adapter_dir.glob(".llm2hef-install-*")) if host.adapter_dir.exists() else []
            if temps and temps[0].stat().st_size > 0:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the download never started")
        proc.send_signal(sig)
        proc.wait(timeout=20)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -sig
    # The temporary library and the folders this install made are gone.
    assert sorted(p.name for p in host.data.rglob("*")) == []


def test_a_killed_installs_leftover_is_swept_by_the_next_install(host):
    folder, _ = published(host)
    host.adapter_dir.mkdir(parents=True)
    leftover = host.adapter_dir / ".llm2hef-install-fake_good-Ab12Cd"
    leftover.write_bytes(b"\0" * 4096)
    old = time.time() - 600
    os.utime(leftover, (old, old))
    r = host.ok("registry", "install", "fake_good", "--index", folder)
    assert not leftover.exists()
    assert f"{leftover}: removed, left by an interrupted run" in r.stderr
    assert sorted(p.name for p in host.adapter_dir.iterdir()) == ["fake_good.adapter.json", "fake_good.so"]


def test_a_fresh_leftover_may_be_another_runs_and_is_kept(host):
    folder, _ = published(host)
    host.adapter_dir.mkdir(parents=True)
    fresh = host.adapter_dir / ".llm2hef-install-fake_good-Ab12Cd"
    fresh.write_bytes(b"x")
    host.ok("registry", "install", "fake_good", "--index", folder)
    assert fresh.exists()


# --- item 12: every folder a failed command created goes again -----------------------------------

def test_a_failed_first_install_leaves_no_empty_folders(host):
    folder, entry = published(host)
    entry["library"]["sha256"] = "0" * 64
    write_index(host, folder, [entry], host.tmp / "index-key.key")
    r = host.run("registry", "install", "fake_good", "--index", folder)
    assert r.returncode == 1 and "checksum mismatch" in r.stderr
    assert list(host.data.iterdir()) == [], "the folders made for the install were left"


# --- item 15: a trusted-keys path that is a file -------------------------------------------------

def test_keys_add_when_the_store_path_is_a_file(host):
    host.ok("registry", "keys", "generate", host.tmp / "k")
    store = trusted_store(host)
    store.parent.mkdir(parents=True)
    store.write_text("not a folder")
    r = host.run("registry", "keys", "add", host.tmp / "k.pub")
    assert r.returncode == 3, f"exit {r.returncode}: {r.stderr}"
    assert f"{store}: the trusted-keys folder is not a folder (a file of that name is in the way)" in r.stderr
    assert store.read_text() == "not a folder"


# --- item 16: leniencies ---------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["index.json", "index.json.sig"])
def test_a_byte_order_mark_is_refused(host, which):
    folder, _ = published(host)
    path = folder / which
    # The mark is refused before the signature is checked, so it is what the
    # message names even though the signature no longer matches.
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    r = host.run("registry", "search", "--index", folder)
    assert r.returncode == 3, r.stderr
    assert f"{which}: starts with a UTF-8 byte order mark" in r.stderr


def test_sign_refuses_an_index_with_a_byte_order_mark(host):
    """An index signed with the mark could never be installed from: the
    client refuses it (above). sign says so before writing a signature."""
    folder, _ = published(host)
    index = folder / "index.json"
    index.write_bytes(b"\xef\xbb\xbf" + index.read_bytes())
    before = (folder / "index.json.sig").read_bytes()
    r = host.run("registry", "sign", index, "--key", host.tmp / "index-key.key", "--force")
    assert r.returncode == 3, r.stderr
    assert f"{index}: starts with a UTF-8 byte order mark" in r.stderr and "remove" in r.stderr
    assert (folder / "index.json.sig").read_bytes() == before


def test_a_trusted_key_owned_by_another_user_is_refused(host):
    folder, _ = published(host)
    key = next(trusted_store(host).glob("*.pub"))
    os.chown(key, 12345, 12345)
    for args in (["registry", "install", "fake_good", "--index", folder], ["registry", "keys", "list"]):
        r = host.run(*args)
        assert r.returncode == 3, f"{args}: exit {r.returncode}\n{r.stderr}"
        assert f"{key}: file is owned by uid 12345, not by you or root" in r.stderr, r.stderr
    assert not host.adapter_dir.exists()


def test_a_trusted_key_behind_a_folder_others_may_write_is_refused(host):
    folder, _ = published(host)
    parent = trusted_store(host).parent  # .../llm2hef, above trusted-keys
    parent.chmod(0o777)
    r = host.run("registry", "install", "fake_good", "--index", folder)
    assert r.returncode == 3, r.stderr
    assert f"folder {parent} on the path to the trusted key is world-writable" in r.stderr, r.stderr
    parent.chmod(0o755)
    host.ok("registry", "install", "fake_good", "--index", folder)


@pytest.mark.parametrize("file", [".hidden.so", "..so"])
def test_a_hidden_library_file_name_is_refused(host, file):
    folder, entry = published(host)
    entry["library"]["file"] = file
    write_index(host, folder, [entry], host.tmp / "index-key.key")
    r = host.run("registry", "search", "--index", folder)
    assert r.returncode == 3 and "field 'library.file'" in r.stderr, r.stderr


def test_a_library_url_with_a_nul_is_refused(host):
    folder, entry = published(host)
    entry["library"]["url"] = "lib/fake_good.so\u0000.evil"
    write_index(host, folder, [entry], host.tmp / "index-key.key")
    r = host.run("registry", "install", "fake_good", "--index", folder)
    assert r.returncode == 3 and "field 'library.url': has a control character (0)" in r.stderr, r.stderr
    assert not host.adapter_dir.exists()


def test_keys_list_escapes_control_characters_in_a_comment(host):
    host.ok("registry", "keys", "generate", host.tmp / "k", "--comment", "evil\x1b[2J\nfake line")
    host.ok("registry", "keys", "add", host.tmp / "k.pub")
    r = host.ok("registry", "keys", "list")
    assert "\x1b" not in r.stdout and r.stdout.count("\n") == 1
    assert "evil\\x1b[2J\\x0afake line" in r.stdout
    listed = json.loads(host.ok("registry", "keys", "list", "--json").stdout)
    assert listed["keys"][0]["comment"] == "evil\x1b[2J\nfake line"


def test_one_unreadable_key_file_does_not_stop_every_command(host):
    folder, _ = published(host)
    broken = trusted_store(host) / "broken.pub"
    broken.write_text("{")
    r = host.ok("registry", "install", "fake_good", "--index", folder)
    assert f"{broken}: not valid JSON" in r.stderr and "ignored" in r.stderr
    assert "broken.pub" not in host.ok("registry", "keys", "list").stdout


def test_collect_refuses_a_fifo_and_an_entry_at_the_wrong_path(host):
    idx = host.tmp / "idx"
    entry = entry_for(host, FAKE_GOOD, "https://example.org/fake_good.so")
    (idx / "fake_good").mkdir(parents=True)
    os.mkfifo(idx / "fake_good" / "1.0.0.json")
    r = run_with_deadline(host, "registry", "collect", idx)
    assert r.returncode == 3 and "1.0.0.json: not a regular file" in r.stderr, r.stderr
    (idx / "fake_good" / "1.0.0.json").unlink()
    (idx / "fake_good" / "2.0.0.json").write_text(json.dumps(entry))
    r = host.run("registry", "collect", idx)
    assert r.returncode == 3, r.stderr
    assert "the entry is fake_good@1.0.0, so its file is fake_good/1.0.0.json" in r.stderr
