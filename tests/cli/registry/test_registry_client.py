"""`llm2hef registry search|install|list|uninstall|keys|sign` on the real
binary: a clean user (HOME and XDG folders in tmp), indexes signed with a
throw-away key, adapters built by this build (tests/plugins' fake_good), files
served from file:// URLs and from a local HTTP server on 127.0.0.1. Every bad
input is refused with a non-zero exit and leaves the user's folder as it was."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from registry_index_fixture import FAKE_GOOD, FAKE_GOOD_V2, CleanHost, Server, entry_for, write_index


@pytest.fixture
def host(tmp_path):
    assert FAKE_GOOD.is_file() and FAKE_GOOD_V2.is_file(), "the tests/plugins adapters are not built"
    return CleanHost(tmp_path)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def published(host, name="index", library=FAKE_GOOD, key=None, **changes):
    """A folder index: the library copied next to index.json, named by a relative url."""
    folder = host.tmp / name
    (folder / "lib").mkdir(parents=True)
    shutil.copy(library, folder / "lib" / "fake_good.so")
    entry = entry_for(host, folder / "lib" / "fake_good.so", "lib/fake_good.so", **changes)
    write_index(host, folder, [entry], key or host.new_key(f"{name}-key"))
    return folder, entry


def refused(host, before, r, code, *phrases):
    assert r.returncode == code, f"exit {r.returncode}, expected {code}\n{r.stdout}{r.stderr}"
    for p in phrases:
        assert p in r.stderr, f"{p!r} not in: {r.stderr}"
    assert host.user_files() == before, "the user's folder changed"


def test_install_list_use_and_uninstall(host):
    folder, entry = published(host)
    r = host.ok("registry", "install", "fake_good", "--index", folder, "--json")
    done = json.loads(r.stdout)
    assert (done["name"], done["version"]) == ("fake_good", "1.0.0")
    library = host.adapter_dir / "fake_good.so"
    assert done["library"] == str(library)
    assert hashlib.sha256(library.read_bytes()).hexdigest() == entry["library"]["sha256"]
    manifest = json.loads((host.adapter_dir / "fake_good.adapter.json").read_text())
    assert manifest["library"]["url"].startswith("file://") and manifest["library"]["url"].endswith("/lib/fake_good.so")
    # no temporary file left behind
    assert sorted(p.name for p in host.adapter_dir.iterdir()) == ["fake_good.adapter.json", "fake_good.so"]

    listed = json.loads(host.ok("registry", "list", "--installed", "--json").stdout)
    assert [(a["name"], a["version"], a["state"]) for a in listed["adapters"]] == [("fake_good", "1.0.0", "ok")]
    # The host searches the user's folder by default, after the built-in folders.
    adapters = json.loads(host.ok("adapters", "--json", "--verbose").stdout)
    fake = [a for a in adapters["adapters"] if a["name"] == "fake_good"]
    assert fake and fake[0]["file"] == str(library)
    kinds = [r["kind"] for r in adapters["roots"]]
    assert kinds[-1] == "user" and kinds.index("build tree") < kinds.index("user")
    # registry verify re-checks what is installed
    host.ok("registry", "verify", host.adapter_dir)

    r = host.ok("registry", "uninstall", "fake_good", "--json")
    assert json.loads(r.stdout)["version"] == "1.0.0"
    assert list(host.adapter_dir.iterdir()) == []
    assert json.loads(host.ok("registry", "list", "--installed", "--json").stdout)["adapters"] == []


def test_list_marks_a_modified_library(host):
    folder, _ = published(host)
    host.ok("registry", "install", "fake_good", "--index", folder)
    lib = host.adapter_dir / "fake_good.so"
    data = bytearray(lib.read_bytes())
    data[-1] ^= 1
    lib.write_bytes(bytes(data))
    listed = json.loads(host.ok("registry", "list", "--installed", "--json").stdout)
    assert listed["adapters"][0]["state"] == "modified"


def test_search_reports_versions_and_compatibility(host):
    key = host.new_key("k")
    folder = host.tmp / "idx"
    (folder / "v1").mkdir(parents=True)
    (folder / "v2").mkdir()
    shutil.copy(FAKE_GOOD, folder / "v1" / "fake_good.so")
    shutil.copy(FAKE_GOOD_V2, folder / "v2" / "fake_good.so")
    v1 = entry_for(host, folder / "v1" / "fake_good.so", "v1/fake_good.so")
    v2 = entry_for(host, folder / "v2" / "fake_good.so", "v2/fake_good.so")
    host_fingerprint = v2["sdk_fingerprint"]
    v2["sdk_fingerprint"] = "gcc-99 other build"
    write_index(host, folder, [v1, v2], key)

    report = json.loads(host.ok("registry", "search", "fake", "--index", folder, "--json").stdout)
    assert [a["name"] for a in report["adapters"]] == ["fake_good"]
    a = report["adapters"][0]
    assert a["architectures"] == ["FakeForCausalLM"] and a["installed"] is None
    assert [(v["version"], v["compatible"]) for v in a["versions"]] == [("2.0.0", False), ("1.0.0", True)]
    assert "gcc-99 other build" in a["versions"][0]["reason"] and host_fingerprint in a["versions"][0]["reason"]
    assert host_fingerprint in report["host"]
    # TEXT filters; architectures count
    assert json.loads(host.ok("registry", "search", "FakeForCausal", "--index", folder, "--json").stdout)["adapters"]
    nothing = host.ok("registry", "search", "nothing-like-it", "--index", folder, "--json")
    assert json.loads(nothing.stdout)["adapters"] == []
    text = host.ok("registry", "search", "--index", folder).stdout
    assert "fake_good" in text and "incompatible" in text

    # Without @VERSION the newest build that fits is chosen.
    host.ok("registry", "install", "fake_good", "--index", folder)
    assert json.loads(host.ok("registry", "list", "--installed", "--json").stdout)["adapters"][0]["version"] == "1.0.0"
    after = json.loads(host.ok("registry", "search", "--index", folder, "--json").stdout)
    assert after["adapters"][0]["installed"] == "1.0.0"


def test_another_fingerprint_is_never_installed_and_the_message_names_the_build_that_fits(host):
    folder, entry = published(host, sdk_fingerprint="clang-7 elsewhere")
    before = host.user_files()
    r = host.run("registry", "install", "fake_good@1.0.0", "--index", folder)
    real = json.loads(host.ok("registry", "manifest", FAKE_GOOD, "--license", "MIT", "--maintainer", "x").stdout)
    refused(host, before, r, 1, "clang-7 elsewhere", real["sdk_fingerprint"], "SDK ABI")


def test_a_manifest_that_lies_about_the_fingerprint_is_caught_when_loading(host):
    # bad_fingerprint.so carries another fingerprint; its entry claims this host's.
    lying = FAKE_GOOD.parent / "bad_fingerprint.so"
    folder = host.tmp / "lie"
    folder.mkdir()
    shutil.copy(lying, folder / "fake_good.so")
    good = entry_for(host, FAKE_GOOD, "fake_good.so")
    data = (folder / "fake_good.so").read_bytes()
    good["library"].update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    write_index(host, folder, [good], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 1, "does not load", "fingerprint")


def test_tampered_library_is_refused_before_loading(host, server):
    data = FAKE_GOOD.read_bytes()
    tampered = bytearray(data)
    tampered[len(tampered) // 2] ^= 0xFF
    server.serve_bytes("/fake_good.so", bytes(tampered))
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    folder = host.tmp / "idx"
    write_index(host, folder, [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 1, "library.sha256", "checksum mismatch", "not loaded")


def test_truncated_http_download(host, server):
    data = FAKE_GOOD.read_bytes()
    server.serve_truncated("/fake_good.so", data, keep=len(data) // 2)
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    folder = host.tmp / "idx"
    write_index(host, folder, [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 3, server.url + "/fake_good.so", "truncated")


def test_truncated_file_is_a_size_mismatch(host):
    folder, entry = published(host)
    lib = folder / "lib" / "fake_good.so"
    lib.write_bytes(lib.read_bytes()[:1000])
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 1, "library.size", "gave 1000", "truncated")


def test_a_longer_download_than_the_entry_says_is_stopped(host, server):
    data = FAKE_GOOD.read_bytes()
    server.serve_bytes("/fake_good.so", data + b"\0" * 4096)
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    write_index(host, host.tmp / "idx", [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", host.tmp / "idx")
    refused(host, before, r, 1, "library.size", "sent more")


@pytest.mark.parametrize("field,value", [
    ("file", "../fake_good.so"),
    ("file", "../../.bashrc.so"),
    ("url", "../lib/fake_good.so"),
    ("url", "lib/../../fake_good.so"),
    ("url", "/etc/fake_good.so"),
])
def test_path_traversal_in_a_file_name_is_refused(host, field, value):
    folder, entry = published(host)
    entry["library"][field] = value
    write_index(host, folder, [entry], host.new_key("k2"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 3, f"library.{field}")
    assert not (host.tmp / "fake_good.so").exists() and not (host.data / "fake_good.so").exists()


def test_name_with_path_traversal_is_refused(host):
    folder, entry = published(host)
    entry["name"] = "../fake_good"
    write_index(host, folder, [entry], host.new_key("k2"))
    before = host.user_files()
    r = host.run("registry", "search", "--index", folder)
    refused(host, before, r, 3, "field 'name'")


@pytest.mark.parametrize("target", ["file", "ftp"])
def test_a_redirect_to_another_scheme_is_refused(host, server, target):
    # Followed, the file:// redirect would fetch the genuine library and install it.
    location = f"file://{FAKE_GOOD}" if target == "file" else "ftp://127.0.0.1:1/fake_good.so"
    server.redirect("/fake_good.so", location)
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    write_index(host, host.tmp / "idx", [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", host.tmp / "idx")
    refused(host, before, r, 3, "redirected", location, "refused")


def test_a_redirect_within_http_is_followed(host, server):
    server.serve_bytes("/real.so", FAKE_GOOD.read_bytes())
    server.redirect("/fake_good.so", server.url + "/real.so")
    entry = entry_for(host, FAKE_GOOD, server.url + "/fake_good.so")
    write_index(host, host.tmp / "idx", [entry], host.new_key("k"))
    host.ok("registry", "install", "fake_good", "--index", host.tmp / "idx")
    assert (host.adapter_dir / "fake_good.so").read_bytes() == FAKE_GOOD.read_bytes()


def test_an_index_served_over_http(host, server):
    folder, _ = published(host)
    for name in ("index.json", "index.json.sig"):
        server.serve_bytes(f"/reg/{name}", (folder / name).read_bytes())
    server.serve_bytes("/reg/lib/fake_good.so", FAKE_GOOD.read_bytes())
    report = json.loads(host.ok("registry", "search", "--index", server.url + "/reg/", "--json").stdout)
    assert report["index"] == server.url + "/reg/index.json"
    host.ok("registry", "install", "fake_good", "--index", server.url + "/reg/index.json")
    assert (host.adapter_dir / "fake_good.so").is_file()


def test_an_index_that_is_not_there(host, server):
    before = host.user_files()
    r = host.run("registry", "search", "--index", server.url + "/missing/")
    refused(host, before, r, 3, server.url + "/missing/index.json", "404")
    r = host.run("registry", "install", "fake_good", "--index", host.tmp / "no-such-folder")
    refused(host, before, r, 3, "no-such-folder", "no such folder or index file")


def test_a_library_url_that_is_not_there(host, server):
    entry = entry_for(host, FAKE_GOOD, server.url + "/gone.so")
    write_index(host, host.tmp / "idx", [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", host.tmp / "idx")
    refused(host, before, r, 3, server.url + "/gone.so", "404")


def test_an_architecture_the_library_does_not_report_is_refused(host):
    folder, entry = published(host)
    entry["architectures"] = ["FakeForCausalLM", "LlamaForCausalLM"]
    write_index(host, folder, [entry], host.new_key("k2"))
    before = host.user_files()
    r = host.run("registry", "install", "fake_good", "--index", folder)
    refused(host, before, r, 1, "architectures", "LlamaForCausalLM", "does not report")


def test_a_second_install_of_the_same_version_is_refused(host):
    folder, _ = published(host)
    host.ok("registry", "install", "fake_good", "--index", folder)
    before = host.user_files()
    r = host.run("registry", "install", "fake_good@1.0.0", "--index", folder)
    refused(host, before, r, 2, "already installed")


def test_a_first_party_name_is_not_installed(host):
    gpt2 = FAKE_GOOD.parents[3] / "adapters" / "llm2hef_adapter_gpt2.so"
    folder = host.tmp / "idx"
    folder.mkdir()
    shutil.copy(gpt2, folder / "llm2hef_adapter_gpt2.so")
    entry = entry_for(host, folder / "llm2hef_adapter_gpt2.so", "llm2hef_adapter_gpt2.so")
    write_index(host, folder, [entry], host.new_key("k"))
    before = host.user_files()
    r = host.run("registry", "install", "gpt2", "--index", folder)
    refused(host, before, r, 2, "already provided by", "would never be used")


def test_uninstall_of_something_not_installed(host):
    before = host.user_files()
    refused(host, before, host.run("registry", "uninstall", "fake_good"), 2, "not installed")
    folder, _ = published(host)
    host.ok("registry", "install", "fake_good", "--index", folder)
    before = host.user_files()
    refused(host, before, host.run("registry", "uninstall", "fake_good@9.9.9"), 2, "9.9.9 is not installed")
    refused(host, before, host.run("registry", "uninstall", "other"), 2, "not installed", "fake_good@1.0.0")


def test_unknown_name_or_version(host):
    folder, _ = published(host)
    before = host.user_files()
    refused(host, before, host.run("registry", "install", "nope", "--index", folder), 2,
            "no adapter 'nope'", "fake_good")
    refused(host, before, host.run("registry", "install", "fake_good@3.0.0", "--index", folder), 2, "no version 3.0.0")


@pytest.mark.parametrize("command", ["search", "install"])
def test_an_index_changed_after_signing_is_refused(host, command):
    folder, entry = published(host)
    index = folder / "index.json"
    index.write_text(index.read_text().replace('"MIT"', '"GPL-3.0-only"'))
    before = host.user_files()
    args = ["registry", command] + (["fake_good"] if command == "install" else []) + ["--index", folder]
    refused(host, before, host.run(*args), 1, "index.json.sig", "does not verify")


@pytest.mark.parametrize("command", ["search", "install"])
def test_an_index_signed_by_an_untrusted_key_is_refused(host, command):
    stranger = host.new_key("stranger", trust=False)
    folder, _ = published(host, key=stranger)
    before = host.user_files()
    args = ["registry", command] + (["fake_good"] if command == "install" else []) + ["--index", folder]
    refused(host, before, host.run(*args), 1, "not trusted")


def test_an_unsigned_or_garbled_signature_is_refused(host):
    folder, _ = published(host)
    sig = folder / "index.json.sig"
    doc = json.loads(sig.read_text())
    doc["signature"] = "00" * 64
    sig.write_text(json.dumps(doc))
    before = host.user_files()
    refused(host, before, host.run("registry", "search", "--index", folder), 1, "does not verify")
    sig.write_text("{}")
    refused(host, before, host.run("registry", "search", "--index", folder), 3, "index.json.sig", "format")
    sig.unlink()
    refused(host, before, host.run("registry", "search", "--index", folder), 1, "without its signature")


def test_removing_the_key_removes_the_trust(host):
    folder, _ = published(host)
    host.ok("registry", "search", "--index", folder)
    keys = json.loads(host.ok("registry", "keys", "list", "--json").stdout)["keys"]
    assert [k["origin"] for k in keys] == ["user"]
    host.ok("registry", "keys", "remove", keys[0]["key_id"])
    r = host.run("registry", "search", "--index", folder)
    assert r.returncode == 1 and "not trusted" in r.stderr


def test_keys_add_twice_remove_unknown_and_a_bad_key_file(host):
    key = host.new_key("k")
    r = host.run("registry", "keys", "add", str(key).replace(".key", ".pub"))
    assert r.returncode == 2 and "already trusted" in r.stderr
    r = host.run("registry", "keys", "remove", "0123456789abcdef")
    assert r.returncode == 2 and "no trusted key" in r.stderr
    # a secret key is not a public key; an id that does not match its key is refused
    r = host.run("registry", "keys", "add", key)
    assert r.returncode == 3 and "format" in r.stderr
    pub = json.loads(key.with_suffix(".pub").read_text())
    pub["key_id"] = "0" * 16
    forged = host.tmp / "forged.pub"
    forged.write_text(json.dumps(pub))
    r = host.run("registry", "keys", "add", forged)
    assert r.returncode == 3 and "key_id" in r.stderr
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    r = host.run("registry", "keys", "generate", host.tmp / "k")
    assert r.returncode == 2, r.stderr  # never overwrites a key


def test_a_shipped_key_is_trusted_without_keys_add(host):
    signer = host.new_key("release", trust=False)
    shutil.copy(signer.with_suffix(".pub"), host.shipped / "release.pub")
    folder, _ = published(host, key=signer)
    keys = json.loads(host.ok("registry", "keys", "list", "--json").stdout)["keys"]
    assert [k["origin"] for k in keys] == ["shipped"]
    host.ok("registry", "install", "fake_good", "--index", folder)
    r = host.run("registry", "keys", "remove", keys[0]["key_id"])
    assert r.returncode == 2 and "ships with llm2hef" in r.stderr


def test_no_index_given_is_a_usage_error(host):
    r = host.run("registry", "search")
    assert r.returncode == 2 and "--index" in r.stderr
    env = dict(host.env)
    folder, _ = published(host)
    env["LLM2HEF_INDEX"] = str(folder)
    r = host.run("registry", "search", "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["adapters"][0]["name"] == "fake_good"


def test_every_registry_command_has_help(host):
    # `registry list` alone lists the installed adapters (issue 28; it used to
    # demand --installed): test_list_without_installed_lists_the_installed_adapters.
    for cmd in (["search"], ["install"], ["list"], ["uninstall"], ["keys"], ["keys", "list"], ["keys", "add"],
                ["keys", "remove"], ["keys", "generate"], ["sign"], ["collect"]):
        r = host.run("registry", *cmd, "--help")
        assert r.returncode == 0 and "Usage: llm2hef registry " + " ".join(cmd) in r.stdout, (cmd, r.stdout, r.stderr)


def test_the_user_folder_follows_xdg_rules(host):
    """XDG_DATA_HOME when absolute; a relative one is ignored (the spec says so) for ~/.local/share."""
    folder, _ = published(host)
    env = dict(host.env, XDG_DATA_HOME="relative/data")
    r = host.run("registry", "install", "fake_good", "--index", folder, "--json", env=env)
    assert r.returncode == 0, r.stderr
    expected = host.home / ".local" / "share" / "llm2hef" / "adapters" / "fake_good.so"
    assert json.loads(r.stdout)["library"] == str(expected) and expected.is_file()
    report = json.loads(host.run("adapters", "--json", "--verbose", env=env).stdout)
    assert [a["file"] for a in report["adapters"] if a["name"] == "fake_good"] == [str(expected)]


def test_list_without_installed_lists_the_installed_adapters(host):
    folder, _ = published(host)
    assert "none" in host.ok("registry", "list").stdout
    host.ok("registry", "install", "fake_good", "--index", folder)
    plain = host.ok("registry", "list")
    assert "fake_good 1.0.0" in plain.stdout, plain.stdout
    assert host.ok("registry", "list", "--installed").stdout == plain.stdout
    assert json.loads(host.ok("registry", "list", "--json").stdout)["adapters"][0]["name"] == "fake_good"
