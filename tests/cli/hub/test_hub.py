"""`llm2hef inspect|export ORG/NAME` (issue 40, part 1): a Hub id is an input.

Against a stand-in Hub on 127.0.0.1 (hub_server.py; no network): the files
an export reads are fetched into the Hugging Face cache layout, and nothing
else; a second run fetches nothing; a partial download resumes; a file whose
sha256 is not the Hub's is refused and removed; a killed download leaves no
file that looks complete; HF_HUB_OFFLINE uses the cache only; a gated model
is refused with what to do, and fetched with HF_TOKEN.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub_server import FakeHub, git_blob_id
from llm2hef_cli import BIN, FIXTURES, REPO

FIXTURE = FIXTURES / "gpt2-tiny"
SHAPE = ["--cache", "32", "--prefill", "8", "--no-progress"]
# What the export reads of the fixture; the rest (reference.npz, fixture.json,
# special_tokens_map.json) must not be fetched.
NEEDED = {"config.json", "generation_config.json", "tokenizer_config.json", "tokenizer.json", "model.safetensors"}
WEIGHTS_SHA = hashlib.sha256((FIXTURE / "model.safetensors").read_bytes()).hexdigest()


@pytest.fixture
def hub():
    with FakeHub() as h:
        h.add_folder("acme/gpt2-tiny", FIXTURE)
        yield h


def environment(hub: FakeHub, tmp: Path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "TRANSFORMERS_"))}
    env.update(HF_ENDPOINT=hub.url, HF_HUB_CACHE=str(tmp / "hub"), HF_HOME=str(tmp / "hf-home"), HOME=str(tmp))
    env.update(extra)
    return env


def llm2hef(hub, tmp, *args, cwd=None, **env):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=environment(hub, tmp, **env), cwd=cwd or tmp)


def repo_cache(tmp: Path) -> Path:
    return tmp / "hub" / "models--acme--gpt2-tiny"


def snapshot(tmp: Path, hub: FakeHub) -> Path:
    return repo_cache(tmp) / "snapshots" / hub.repos["acme/gpt2-tiny"].commit


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def without_source_path(manifest: bytes) -> dict:
    m = json.loads(manifest)
    m["model"].pop("dir")  # where the checkpoint was read: the cache snapshot or the local folder
    return m


def assert_nothing_complete_looking(tmp: Path, hub: FakeHub) -> None:
    """No verified-looking weights: neither blobs/<sha256> nor a snapshot entry."""
    assert not (repo_cache(tmp) / "blobs" / WEIGHTS_SHA).exists()
    assert not os.path.lexists(snapshot(tmp, hub) / "model.safetensors")


def test_export_of_a_hub_id_equals_the_export_of_the_folder(hub, tmp_path):
    local = tmp_path / "local" / "gpt2-tiny"  # the same name as the repository's
    shutil.copytree(FIXTURE, local)
    r = llm2hef(hub, tmp_path, "export", local, "-o", tmp_path / "from-folder", *SHAPE)
    assert r.returncode == 0, r.stderr
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "from-hub", *SHAPE)
    assert r.returncode == 0, r.stderr

    a, b = tree(tmp_path / "from-folder"), tree(tmp_path / "from-hub")
    assert a.keys() == b.keys()
    for name in a:
        if name == "manifest.json":
            assert without_source_path(a[name]) == without_source_path(b[name])
        else:
            assert a[name] == b[name], name

    # The Hugging Face cache layout: blobs named by sha256 (LFS) or git blob
    # id, relative links in snapshots/<commit>, refs/main holding the commit.
    snap = snapshot(tmp_path, hub)
    assert {p.name for p in snap.iterdir()} == NEEDED
    link = snap / "model.safetensors"
    assert link.is_symlink() and os.readlink(link) == f"../../blobs/{WEIGHTS_SHA}"
    assert (repo_cache(tmp_path) / "refs" / "main").read_text() == hub.repos["acme/gpt2-tiny"].commit
    assert json.loads((tmp_path / "from-hub" / "manifest.json").read_text())["model"]["dir"] == str(snap)

    # A second run fetches nothing: one metadata request, no file.
    hub.requests.clear()
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "again", *SHAPE)
    assert r.returncode == 0, r.stderr
    assert hub.downloads() == [] and len(hub.requests) == 1, hub.requests
    assert tree(tmp_path / "again")["model.onnx.data"] == a["model.onnx.data"]


def test_huggingface_hub_reads_what_was_fetched(hub, tmp_path):
    """hf and transformers find the files in the cache, offline."""
    pytest.importorskip("huggingface_hub")
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny")
    assert r.returncode == 0, r.stderr
    script = ("import huggingface_hub as h; "
              "print(h.hf_hub_download('acme/gpt2-tiny', 'model.safetensors')); "
              "print(h.hf_hub_download('acme/gpt2-tiny', 'config.json', revision='main'))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env=environment(hub, tmp_path, HF_HUB_OFFLINE="1"))
    assert out.returncode == 0, out.stderr
    assert [Path(p) for p in out.stdout.split()] == [snapshot(tmp_path, hub) / "model.safetensors",
                                                     snapshot(tmp_path, hub) / "config.json"]


def test_a_partial_download_resumes_with_a_range_request(hub, tmp_path):
    data = (FIXTURE / "model.safetensors").read_bytes()
    blobs = repo_cache(tmp_path) / "blobs"
    blobs.mkdir(parents=True)
    (blobs / f"{WEIGHTS_SHA}.incomplete").write_bytes(data[:200_000])
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny")
    assert r.returncode == 0, r.stderr
    assert [q.range for q in hub.downloads() if q.path.startswith("/lfs/")] == ["bytes=200000-"]
    assert (blobs / WEIGHTS_SHA).read_bytes() == data
    assert not (blobs / f"{WEIGHTS_SHA}.incomplete").exists()


def test_a_server_ignoring_the_range_gets_the_file_whole(hub, tmp_path):
    data = (FIXTURE / "model.safetensors").read_bytes()
    blobs = repo_cache(tmp_path) / "blobs"
    blobs.mkdir(parents=True)
    (blobs / f"{WEIGHTS_SHA}.incomplete").write_bytes(data[:200_000])
    hub.ignore_range = True
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny")
    assert r.returncode == 0, r.stderr
    assert (blobs / WEIGHTS_SHA).read_bytes() == data


def test_a_sha256_mismatch_is_refused_and_nothing_is_kept(hub, tmp_path):
    hub.corrupt.add("model.safetensors")
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "out", *SHAPE)
    assert r.returncode == 3, r.stderr
    assert "sha256" in r.stderr and WEIGHTS_SHA in r.stderr and "model.safetensors" in r.stderr
    assert_nothing_complete_looking(tmp_path, hub)
    assert not (repo_cache(tmp_path) / "blobs" / f"{WEIGHTS_SHA}.incomplete").exists()
    assert not (tmp_path / "out").exists()


def test_a_small_file_is_checked_against_its_git_blob_id(hub, tmp_path):
    """Files the Hub keeps in git (not LFS) have no sha256 in its metadata:
    their git blob id is checked instead."""
    hub.corrupt.add("config.json")
    blob = git_blob_id((FIXTURE / "config.json").read_bytes())
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny")
    assert r.returncode == 3, r.stderr
    assert "git blob id" in r.stderr and blob in r.stderr and "config.json" in r.stderr
    blobs = repo_cache(tmp_path) / "blobs"
    assert not (blobs / blob).exists() and not (blobs / f"{blob}.incomplete").exists()
    assert not os.path.lexists(snapshot(tmp_path, hub) / "config.json")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_an_interrupted_download_leaves_no_complete_looking_file(hub, tmp_path, sig):
    hub.delay_per_chunk = 0.05  # 496 KB at 80 KB/s: about 6 s, killed after the first chunks
    partial = repo_cache(tmp_path) / "blobs" / f"{WEIGHTS_SHA}.incomplete"
    p = subprocess.Popen([str(BIN), "export", "acme/gpt2-tiny", "-o", str(tmp_path / "out"), *SHAPE],
                         env=environment(hub, tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (partial.exists() and partial.stat().st_size > 0):
        assert p.poll() is None, p.stderr.read()
        assert time.monotonic() < deadline, "the download never started"
        time.sleep(0.02)
    p.send_signal(sig)
    p.wait(timeout=30)
    p.stderr.close()
    assert p.returncode != 0
    assert_nothing_complete_looking(tmp_path, hub)
    assert partial.stat().st_size < (FIXTURE / "model.safetensors").stat().st_size
    assert not (tmp_path / "out").exists()

    # The next run resumes from what arrived and completes.
    hub.delay_per_chunk = 0.0
    hub.requests.clear()
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "out", *SHAPE)
    assert r.returncode == 0, r.stderr
    ranges = [q.range for q in hub.downloads() if q.path.startswith("/lfs/")]
    assert len(ranges) == 1 and ranges[0] and ranges[0].startswith("bytes="), ranges
    assert (repo_cache(tmp_path) / "blobs" / WEIGHTS_SHA).read_bytes() == (FIXTURE / "model.safetensors").read_bytes()


def test_offline_uses_the_cache_only(hub, tmp_path):
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny", HF_HUB_OFFLINE="1")
    assert r.returncode == 3, r.stderr
    assert "HF_HUB_OFFLINE" in r.stderr and "refs/main" in r.stderr
    assert hub.requests == []

    assert llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny").returncode == 0
    hub.requests.clear()
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "out", *SHAPE, HF_HUB_OFFLINE="1")
    assert r.returncode == 0, r.stderr
    assert hub.requests == []

    # What the cache lacks is named.
    os.unlink(snapshot(tmp_path, hub) / "model.safetensors")
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny", HF_HUB_OFFLINE="1")
    assert r.returncode == 3 and "model.safetensors" in r.stderr and "HF_HUB_OFFLINE" in r.stderr, r.stderr
    assert hub.requests == []


def test_no_answer_from_the_hub_falls_back_on_the_cache(hub, tmp_path):
    nobody = "http://127.0.0.1:1"  # a refused connection
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny", HF_ENDPOINT=nobody)
    assert r.returncode == 3 and "did not answer" in r.stderr and nobody in r.stderr, r.stderr
    assert llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny").returncode == 0
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny", HF_ENDPOINT=nobody)
    assert r.returncode == 0, r.stderr
    assert "using the cached" in r.stderr


def test_a_gated_model_is_refused_with_what_to_do(hub, tmp_path):
    hub.repos["acme/gpt2-tiny"].gated = True
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "out", *SHAPE)
    assert r.returncode == 3, r.stderr
    assert "gated" in r.stderr and "accept" in r.stderr and f"{hub.url}/acme/gpt2-tiny" in r.stderr
    assert "HF_TOKEN" in r.stderr
    assert not (tmp_path / "out").exists()

    # The LFS file is redirected to another host (the Hub's CDN): the token
    # goes to the Hub only.
    hub.cdn_host = "localhost"
    hub.requests.clear()
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "out", *SHAPE, HF_TOKEN=hub.token)
    assert r.returncode == 0, r.stderr
    assert hub.token not in r.stderr
    to_hub = [q for q in hub.requests if not q.path.startswith("/lfs/")]
    to_cdn = [q for q in hub.requests if q.path.startswith("/lfs/")]
    assert to_hub and all(q.authorization == f"Bearer {hub.token}" for q in to_hub)
    assert len(to_cdn) == 1 and to_cdn[0].authorization is None


def test_unknown_repository_and_revision_are_named(hub, tmp_path):
    r = llm2hef(hub, tmp_path, "inspect", "acme/no-such-model")
    assert r.returncode == 3 and "acme/no-such-model" in r.stderr and "local folder" in r.stderr, r.stderr
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny@v9")
    assert r.returncode == 3 and "no revision 'v9'" in r.stderr, r.stderr


def test_a_revision_is_fetched_and_recorded(hub, tmp_path):
    commit = hub.repos["acme/gpt2-tiny"].commit
    r = llm2hef(hub, tmp_path, "inspect", f"acme/gpt2-tiny@{commit}")
    assert r.returncode == 0, r.stderr
    assert (snapshot(tmp_path, hub) / "config.json").is_file()
    assert not (repo_cache(tmp_path) / "refs").exists()  # a commit needs no ref


def test_a_bad_output_is_refused_before_anything_is_fetched(hub, tmp_path):
    (tmp_path / "taken").mkdir()
    r = llm2hef(hub, tmp_path, "export", "acme/gpt2-tiny", "-o", tmp_path / "taken", *SHAPE)
    assert r.returncode == 2 and "already exists" in r.stderr, r.stderr
    assert hub.requests == []


def test_a_local_folder_wins_over_a_hub_id(hub, tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "acme" / "gpt2-tiny")
    r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert hub.requests == []


def test_a_sharded_checkpoint_fetches_its_index_and_shards(tmp_path):
    with FakeHub() as hub:
        hub.add_folder("acme/gpt2-tiny", FIXTURES / "gpt2-sharded-bf16")
        r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny")
        assert r.returncode == 0, r.stderr
        fetched = {p.name for p in snapshot(tmp_path, hub).iterdir()}
    assert {"model.safetensors.index.json", "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors"} <= fetched
    assert "reference.npz" not in fetched and "special_tokens_map.json" not in fetched


def test_a_gguf_in_a_repository(tmp_path):
    gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
    del gguf
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_gguf_fixtures", fx)
    spec.loader.exec_module(fx)
    made = tmp_path / "made"
    fx.convert(FIXTURE, made, "F32", 0)
    (file,) = made.glob("*.gguf")
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(file, repo / file.name)
    shutil.copy(file, repo / ("other-" + file.name))
    with FakeHub() as hub:
        hub.add_folder("acme/gpt2-tiny-GGUF", repo)
        r = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny-GGUF")
        assert r.returncode == 3 and "name the one" in r.stderr and file.name in r.stderr, r.stderr
        # The fixture's GGUF carries no tokenizer: inspect says export would
        # stop (exit 3), the same for the file fetched and the local one.
        r = llm2hef(hub, tmp_path, "inspect", f"acme/gpt2-tiny-GGUF/{file.name}", "--json")
        r2 = llm2hef(hub, tmp_path, "inspect", "acme/gpt2-tiny-GGUF", "--gguf-file", file.name, "--json")
        fetched = [q.path for q in hub.downloads() if "/resolve/" in q.path]
        cached = tmp_path / "hub" / "models--acme--gpt2-tiny-GGUF"
    assert len(fetched) == 1 and fetched[0].endswith("/" + file.name)  # the one file, once
    local = subprocess.run([str(BIN), "inspect", str(file), "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == r2.returncode == local.returncode, (r.stderr, local.stderr)
    assert json.loads(r.stdout)["parameters"] > 0
    commit = hub.repos["acme/gpt2-tiny-GGUF"].commit
    in_cache = str(cached / "snapshots" / commit / file.name)
    assert r.stdout.replace(in_cache, "MODEL") == r2.stdout.replace(in_cache, "MODEL")
    assert r.stdout.replace(in_cache, "MODEL") == local.stdout.replace(str(file), "MODEL")


def test_gguf_file_needs_a_hub_id(hub, tmp_path):
    r = llm2hef(hub, tmp_path, "inspect", FIXTURE, "--gguf-file", "x.gguf")
    assert r.returncode == 2 and "--gguf-file" in r.stderr and "local path" in r.stderr, r.stderr
