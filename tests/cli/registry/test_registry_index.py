"""`llm2hef registry collect`: what CI runs over registry/index/ (ctest
registry_index_entries) before an index is signed. Entries are written by
`registry manifest` from adapters this build made; each refusal has a test."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from llm2hef_cli import BIN, REPO
from registry_index_fixture import FAKE_GOOD, FAKE_GOOD_V2, CleanHost, entry_for

FIRST_PARTY_INDEX = Path(os.environ.get("LLM2HEF_BUILD_ADAPTER_DIR", BIN.parent / "adapters")) / "index.json"


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
