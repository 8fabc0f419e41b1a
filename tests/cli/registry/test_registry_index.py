"""`llm2hef registry collect`: what CI runs over registry/index/ (ctest
registry_index_entries) before an index is signed. Entries are written by
`registry manifest` from adapters this build made; each refusal has a test.
And registry/index/hello/, the worked example, against what
tools/rebuild-hello-index.py writes for this build of examples/hello_adapter."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm2hef_cli import BIN, REPO
from registry_index_fixture import FAKE_GOOD, FAKE_GOOD_V2, CleanHost, entry_for

FIRST_PARTY_INDEX = Path(os.environ.get("LLM2HEF_BUILD_ADAPTER_DIR", BIN.parent / "adapters")) / "index.json"
# examples/hello_adapter as this build compiles it (tests/registry/CMakeLists.txt).
HELLO = BIN.parent / "tests" / "registry" / "hello" / "hello_adapter.so"
REBUILD_HELLO = REPO / "tools" / "rebuild-hello-index.py"


@pytest.fixture
def host(tmp_path):
    return CleanHost(tmp_path)


def put(folder: Path, entry: dict, name: str | None = None) -> Path:
    path = folder / entry["name"] / (name or f"{entry['version']}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entry, indent=2))
    return path


def collect(host, folder):
    return host.run("registry", "collect", folder, "--first-party", FIRST_PARTY_INDEX)


def test_the_repository_index_collects(host):
    r = collect(host, REPO / "registry" / "index")
    assert r.returncode == 0, r.stderr
    index = json.loads(r.stdout)
    assert index["index_version"] == 1
    assert "hello" in [e["name"] for e in index["adapters"]]


def test_versions_are_collected_in_order(host):
    idx = host.tmp / "idx"
    put(idx, entry_for(host, FAKE_GOOD_V2, "https://example.org/v2/fake_good.so"))
    put(idx, entry_for(host, FAKE_GOOD, "https://example.org/v1/fake_good.so"))
    r = collect(host, idx)
    assert r.returncode == 0, r.stderr
    assert [(e["name"], e["version"]) for e in json.loads(r.stdout)["adapters"]] == [("fake_good", "1.0.0"),
                                                                                     ("fake_good", "2.0.0")]


def test_a_duplicate_name_at_version_is_refused(host):
    """Each entry lives at <name>/<version>.json, so a second copy can only be at a wrong path."""
    idx = host.tmp / "idx"
    e = entry_for(host, FAKE_GOOD, "https://example.org/fake_good.so")
    put(idx, e)
    put(idx, e, "again.json")
    r = collect(host, idx)
    assert r.returncode == 3 and "again.json: fields 'name' and 'version'" in r.stderr, r.stderr
    assert "so its file is fake_good/1.0.0.json" in r.stderr


def test_a_first_party_name_is_refused(host):
    idx = host.tmp / "idx"
    gpt2 = FIRST_PARTY_INDEX.parent / "llm2hef_adapter_gpt2.so"
    put(idx, entry_for(host, gpt2, "https://example.org/gpt2.so"))
    r = collect(host, idx)
    assert r.returncode == 3 and "field 'name'" in r.stderr and "first-party" in r.stderr, r.stderr
    # without --first-party the same entry passes: the clash is what is refused
    assert host.run("registry", "collect", idx).returncode == 0


def test_two_adapters_with_one_library_file_name_are_refused(host):
    idx = host.tmp / "idx"
    a = entry_for(host, FAKE_GOOD, "https://example.org/a/fake_good.so")
    b = dict(a, name="other_fake")
    put(idx, a)
    put(idx, b)
    r = collect(host, idx)
    assert r.returncode == 3 and "library.file" in r.stderr and "share one folder" in r.stderr, r.stderr


@pytest.mark.parametrize("drop,field", [(("library", "url"), "library.url"), (("library", "size"), "library.size"),
                                        (("sdk_fingerprint",), "sdk_fingerprint")])
def test_an_entry_must_say_where_and_for_which_build(host, drop, field):
    idx = host.tmp / "idx"
    e = entry_for(host, FAKE_GOOD, "https://example.org/fake_good.so")
    target = e
    for k in drop[:-1]:
        target = target[k]
    del target[drop[-1]]
    path = put(idx, e)
    r = collect(host, idx)
    assert r.returncode == 3 and str(path) in r.stderr and f"'{field}'" in r.stderr, r.stderr


@pytest.mark.parametrize("changes,field", [
    ({"library": {"file": "../x.so"}}, "library.file"),
    ({"library": {"url": "../x.so"}}, "library.url"),
    ({"library": {"url": "ftp://example.org/x.so"}}, "library.url"),
    ({"licence": "MIT"}, "licence"),
])
def test_bad_entries_are_named(host, changes, field):
    idx = host.tmp / "idx"
    e = entry_for(host, FAKE_GOOD, "https://example.org/fake_good.so")
    for k, v in changes.items():
        if isinstance(v, dict):
            e[k].update(v)
        else:
            e[k] = v
    put(idx, e)
    r = collect(host, idx)
    assert r.returncode == 3 and field in r.stderr, r.stderr


def rebuild_hello(library: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, REBUILD_HELLO, "--library", library, "--llm2hef", BIN, "-o", out],
                          capture_output=True, text=True, timeout=120)


def without_machine_fields(entry: dict) -> dict:
    """The entry less what the machine that built the library decides: its
    size and SHA-256 (compiler, flags, the paths in the families library's
    debug information) and the fingerprint (compiler, dependency versions)."""
    entry = json.loads(json.dumps(entry))
    for field in ("sha256", "size"):
        assert field in entry["library"], entry
        del entry["library"][field]
    assert entry.pop("sdk_fingerprint"), entry
    return entry


def test_the_hello_entry_is_what_the_rebuild_script_writes(tmp_path):
    """Everything the source tree decides (claims, sdk_abi, publisher, URL) is what the
    script writes today: an ABI bump or a changed example fails here until the script is rerun."""
    out = tmp_path / "hello.json"
    r = rebuild_hello(HELLO, out)
    assert r.returncode == 0, r.stderr
    committed = json.loads((REPO / "registry" / "index" / "hello" / "0.1.0.json").read_text())
    assert without_machine_fields(json.loads(out.read_text())) == without_machine_fields(committed), \
        "registry/index/hello/0.1.0.json is stale: run tools/rebuild-hello-index.py"


def test_a_failed_rebuild_leaves_the_entry_as_it_was(tmp_path):
    out = tmp_path / "entry" / "hello.json"
    out.parent.mkdir()
    out.write_text("the entry before\n")
    not_a_library = tmp_path / "hello_adapter.so"
    not_a_library.write_text("not a library\n")
    r = rebuild_hello(not_a_library, out)
    assert r.returncode == 3 and f"{not_a_library}: not a shared library" in r.stderr, r.stderr
    assert out.read_text() == "the entry before\n"
    assert [p.name for p in out.parent.iterdir()] == ["hello.json"]  # no temporary file left beside it
