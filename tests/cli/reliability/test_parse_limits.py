"""Issue 12, classes 10 and 11: large inputs are parsed in linear time, and a
JSON file over its kind's size limit is refused with exit 3 naming the file
and the limit. Inputs come from tools/bench/make_parse_inputs.py (the
benchmark's generator); the over-limit files are sparse, so they cost no disk.

No timing is asserted: before the fix a 20,000-layer HN took minutes of CPU
(quadratic), which the CLI suite's ctest timeout turns into a failure."""
from __future__ import annotations

import importlib.util
import json
import shutil
import tarfile

import pytest

import har_fixtures as hf
import hef_writer as hw
from llm2hef_cli import FIXTURES, REPO
from llm2hef_cli import llm2hef as run

FIXTURE = FIXTURES / "gpt2-tiny"
MiB = 1 << 20

_spec = importlib.util.spec_from_file_location("make_parse_inputs", REPO / "tools" / "bench" / "make_parse_inputs.py")
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)


def args(**kw):
    return type("Args", (), kw)()


# --- class 10: linear parsing ------------------------------------------------------------------------------

LAYERS = 20000


@pytest.fixture(scope="module")
def chain_har(tmp_path_factory):
    return gen.write_chain_har(tmp_path_factory.mktemp("chain") / "chain.har", LAYERS)


def test_big_hn_inspect_counts_every_layer(chain_har):
    r = run("har", "inspect", chain_har, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["layer_count"] == LAYERS + 2  # the chain, its input and its output


def test_big_hn_lines_list_every_conv(chain_har):
    r = run("har", "lines", chain_har, "--for", "optimize", "--pe-width", 4)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("/conv") == LAYERS


def test_big_hn_fix_runs_every_pass(chain_har, tmp_path):
    r = run("har", "fix", chain_har, "-o", tmp_path / "out.har", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["written"] is True


def test_rewritten_hn_keeps_the_layer_order(tmp_path):
    # The HN is parsed in document order and written back in it (a sorted
    # parse would put conv10 before conv2).
    hn, w = hf.parsed_har(layers=3)
    before = list(hn["layers"])
    assert before != sorted(before)
    har = hf.write_har(tmp_path / "tiny.har", "tiny", hn, w)
    (tmp_path / "manifest.json").write_text(json.dumps(hf.manifest()))
    r = run("har", "fix", har, "-o", tmp_path / "out.har", "--manifest", tmp_path / "manifest.json", "--json")
    assert r.returncode == 0, r.stderr
    assert "tiny.hn" in json.loads(r.stdout)["rewritten_members"]
    with tarfile.open(tmp_path / "out.har") as tar:
        after = list(json.loads(tar.extractfile("tiny.hn").read())["layers"])
    kept = [n for n in after if n in hn["layers"]]
    assert kept == [n for n in before if n in kept]  # the layers that stay keep their order
    assert len(kept) > len(before) // 2


def test_big_safetensors_header_inspects(tmp_path):
    ckpt = tmp_path / "ckpt"
    gen.cmd_safetensors(args(out=ckpt, tensors=20000))
    r = run("inspect", ckpt, "--json", "--cache", 64, "--prefill", 16)
    assert r.returncode == 0, r.stderr


def test_many_hef_resources_are_read_and_duplicates_still_found(tmp_path):
    hef = tmp_path / "many.hef"
    spec = hw.genai_spec()
    hef.write_bytes(gen.hef_with_many_entries(hw, spec, 40000, 0))
    r = run("hef", "inspect", hef, "--json")
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)["resources"]) == 40004
    # The duplicate check (now a hash set) still names a repeated resource.
    hef.write_bytes(gen.hef_with_many_entries(hw, spec, 40000, 0, duplicate_last=True))
    r = run("hef", "inspect", hef)
    assert r.returncode == 3 and "resource name 'extra0.bin' appears twice" in r.stderr, r.stderr


# --- class 11: size limits ---------------------------------------------------------------------------------

def checkpoint_copy(tmp_path):
    ckpt = tmp_path / "ckpt"
    shutil.copytree(FIXTURE, ckpt)
    return ckpt


def sparse(path, size):
    with open(path, "r+b") as f:
        f.truncate(size)


def assert_refused(r, file, limit_bytes, kind):
    assert r.returncode == 3, (r.returncode, r.stderr)
    assert str(file) in r.stderr, r.stderr
    assert "limit of %d bytes (%d MiB) for a %s" % (limit_bytes, limit_bytes // MiB, kind) in r.stderr, r.stderr


def test_tokenizer_over_limit_is_refused_by_export_and_inspect(tmp_path):
    ckpt = checkpoint_copy(tmp_path)
    sparse(ckpt / "tokenizer.json", 128 * MiB + 1)
    r = run("export", ckpt, "-o", tmp_path / "out", "--cache", 64, "--prefill", 16, "--no-progress")
    assert_refused(r, ckpt / "tokenizer.json", 128 * MiB, "tokenizer.json")
    assert not (tmp_path / "out").exists()
    r = run("inspect", ckpt, "--json", "--cache", 64, "--prefill", 16)
    # inspect reports the resource problem in full, with the status export would have (issue 28 item 2)
    assert r.returncode == 3, r.stderr
    assert "limit of %d bytes" % (128 * MiB) in json.loads(r.stdout)["resources"]["error"]


def test_config_over_limit_is_refused(tmp_path):
    ckpt = checkpoint_copy(tmp_path)
    sparse(ckpt / "config.json", 16 * MiB + 1)
    assert_refused(run("inspect", ckpt), ckpt / "config.json", 16 * MiB, "config or manifest JSON file")


def test_tokenizer_at_limit_passes_the_size_check(tmp_path):
    # A file of exactly the limit gets past the size check; its sparse tail
    # of NUL bytes is then refused as not JSON (nlohmann alone stops at the
    # first NUL and accepted the file).
    ckpt = checkpoint_copy(tmp_path)
    sparse(ckpt / "tokenizer.json", 128 * MiB)
    r = run("export", ckpt, "-o", tmp_path / "out", "--cache", 64, "--prefill", 16, "--no-progress")
    assert r.returncode == 3, r.stderr
    assert "exceed the limit" not in r.stderr, r.stderr
    assert "tokenizer.json: not valid JSON: a NUL byte at offset" in r.stderr, r.stderr


def test_hn_over_limit_is_refused_before_reading(tmp_path):
    har = tmp_path / "big.har"
    size = 128 * MiB + 1
    info = tarfile.TarInfo("tiny.hn")
    info.size = size
    header = info.tobuf(tarfile.PAX_FORMAT)
    with open(har, "wb") as f:
        f.write(header)
    # The member's data, padding and the two end blocks, as holes.
    sparse(har, len(header) + (size + 511) // 512 * 512 + 1024)
    r = run("har", "inspect", har)
    assert r.returncode == 3, r.stderr
    assert "member 'tiny.hn'" in r.stderr and str(har) in r.stderr, r.stderr
    assert "limit of %d bytes (128 MiB) for a HN" % (128 * MiB) in r.stderr, r.stderr
