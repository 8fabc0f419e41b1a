"""`llm2hef hef inspect | check | set-config` on HEFs written from the format facts.

The HEFs come from tools/fixtures/hef_writer.py, which encodes the header and
the protobuf by hand (field numbers of hailo-contract.md section 10), not with
llm2hef's reader. Covered:
(a) inspect reads headers v0-v3, both network-group layouts, the six inputs,
    sharded outputs, cache edges and resources with checksum status;
(b) check passes a well-formed genai HEF and fails each contract rule on a HEF
    broken for that rule alone, naming rule and section; --manifest agreement;
(c) corrupted files (bad magic, sizes beyond the file, wrong checksums,
    truncated proto) exit 3 or 1 with a message naming the field, never a crash;
(d) set-config writes a HEF that inspect verifies (all checksums), carries the
    new config, keeps the input untouched, and can be patched again.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
sys.path.insert(0, str(REPO / "tools" / "fixtures"))
import hef_writer as hw  # noqa: E402


def run(*args):
    r = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=120)
    # A crash (signal) shows as a negative status: never acceptable.
    assert r.returncode >= 0, f"llm2hef died with signal {-r.returncode}: {r.stderr}"
    assert "internal error" not in r.stderr, r.stderr
    return r


def write_hef(tmp_path, name="model.hef", **spec):
    p = tmp_path / name
    p.write_bytes(hw.genai_hef(**spec))
    return p


def inspect_json(path, *extra):
    r = run("hef", "inspect", path, "--json", *extra)
    assert r.returncode in (0, 1), r.stderr
    return r, json.loads(r.stdout)


def check_json(path, *extra):
    r = run("hef", "check", path, "--json", *extra)
    assert r.returncode in (0, 1), r.stderr
    report = json.loads(r.stdout)
    assert r.returncode == (0 if report["pass"] else 1)
    return report


def rules(report, severity="error"):
    return {f["rule"] for f in report["findings"] if f["severity"] == severity}


# --- (a) inspect -------------------------------------------------------------------

@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_inspect_reads_every_header_version(tmp_path, version):
    path = write_hef(tmp_path, version=version)
    r, info = inspect_json(path, "--verify-all")
    assert r.returncode == 0, r.stdout
    assert info["header"]["version"] == version
    assert info["header"]["size"] == hw.HEADER_SIZE[version]
    assert info["hw_arch_id"] == 103
    assert info["sdk_version"] == "5.1.0"
    assert [g["name"] for g in info["network_groups"]] == ["tiny__prefill", "tiny__tbt"]
    assert {r["name"] for r in info["resources"]} == (set() if version == 0 else {
        "hailo-config.json", "rope_theta_data.bin", "tokenizer.json", "embeddings.bin"})
    expected_file = {0: "not verified (algorithm not implemented)", 1: "not verified (algorithm not implemented)",
                     2: "ok", 3: "ok"}[version]
    assert info["checksums"]["file"] == expected_file
    if version >= 1:
        assert all(res["checksum"] == "ok" for res in info["resources"])


@pytest.mark.parametrize("via_core_op", [True, False])
def test_inspect_reports_io_shapes_types_quantization_and_caches(tmp_path, via_core_op):
    path = write_hef(tmp_path, via_core_op=via_core_op, contexts=3)
    _, info = inspect_json(path)
    pre = info["network_groups"][0]
    assert pre["contexts"] == 3
    # The mask input appears in every context but is reported once.
    assert [i["name"] for i in pre["inputs"]] == [f"tiny__prefill/input_layer{k}" for k in range(1, 7)]
    emb = pre["inputs"][0]
    assert emb["shape"] == [1, 8, 32] and emb["type"] == "UINT16" and emb["format"] == "FCR"
    assert emb["quantization"]["scale"] == pytest.approx(0.5)
    assert pre["inputs"][1]["shape"] == [1, 8, 4 * 16] and pre["inputs"][1]["type"] == "UINT8"
    assert [o["shape"] for o in pre["outputs"]] == [[1, 1, 32], [1, 1, 32]]
    assert pre["outputs"][0]["quantization"]["zero_point"] == pytest.approx(128.0)
    assert len(pre["cache_edges"]) == 4 and {c["cache_id"] for c in pre["cache_edges"]} == {0, 1}
    tbt = info["network_groups"][1]
    assert tbt["inputs"][0]["shape"] == [1, 1, 32]


def test_inspect_text_and_help(tmp_path):
    path = write_hef(tmp_path)
    r = run("hef", "inspect", path)
    assert r.returncode == 0
    assert "tiny__prefill" in r.stdout and "embeddings.bin" in r.stdout and "HAILO1XH" in r.stdout
    for sub in ("inspect", "check", "set-config"):
        h = run("hef", sub, "--help")
        assert h.returncode == 0 and "Usage: llm2hef hef " + sub in h.stdout
    assert run("hef").returncode == 2
    assert run("hef", "frobnicate").returncode == 2
    assert run("hef", "inspect").returncode == 2


def test_inspect_large_resources_hashed_only_with_verify_all(tmp_path):
    # 8192 x 4160 x 2 bytes = 65 MiB of embeddings: over the 64 MiB default hashing limit.
    path = write_hef(tmp_path, vocab=8192, hidden=4160, heads=2, kv_heads=1, shards=2)
    _, info = inspect_json(path)
    emb = next(r for r in info["resources"] if r["name"] == "embeddings.bin")
    assert emb["size"] > 64 << 20 and emb["checksum"] == "not checked"
    assert info["checksums"]["file"] == "not checked"
    _, info = inspect_json(path, "--verify-all")
    emb = next(r for r in info["resources"] if r["name"] == "embeddings.bin")
    assert emb["checksum"] == "ok" and info["checksums"]["file"] == "ok"


# --- (b) check ---------------------------------------------------------------------

def test_check_passes_a_wellformed_genai_hef(tmp_path):
    report = check_json(write_hef(tmp_path))
    assert report["pass"] and report["errors"] == 0 and report["warnings"] == 0, report["findings"]
    assert report["derived"]["vocab"] == 64 and report["derived"]["hidden"] == 32
    assert report["derived"]["theta_length"] == 8
    for rule in ("hw-arch", "network-groups", "resources", "hailo-config", "inputs", "input-widths", "embeddings", "outputs"):
        assert rule in report["passed"]
    text = run("hef", "check", write_hef(tmp_path, "b.hef"))
    assert text.returncode == 0 and "PASS" in text.stdout


BROKEN = [
    # (spec, rule that must fail, section quoted)
    (dict(extra_groups=1), "network-groups", "8, 9"),
    (dict(hw_arch=0), "hw-arch", "10"),
    (dict(drop=("tokenizer.json",)), "resources", "6"),
    (dict(config={"pre_process_params": {"prefill_input_tokens_count": 8, "kv_cache_size": 16,
                                         "num_attention_heads": 4, "num_key_value_heads": 2}}), "hailo-config", "6"),
    (dict(config={"eos_token_id": 1, "pre_process_params": {"prefill_input_tokens_size": 8, "kv_cache_size": 16,
                                                            "num_attention_heads": 4, "num_key_value_heads": 2}}),
     "hailo-config", "6"),
    (dict(config="{broken"), "hailo-config", "6"),
    (dict(tokenizer="not json"), "tokenizer", "6"),
    (dict(theta_len=7), "theta", "9"),
    (dict(emb_bytes=1), "inputs", "9"),
    (dict(digest_override={"hailo-config.json": 99}), "checksums", "10"),
]


@pytest.mark.parametrize("spec,rule,section", BROKEN, ids=[b[1] + str(i) for i, b in enumerate(BROKEN)])
def test_check_fails_each_rule(tmp_path, spec, rule, section):
    report = check_json(write_hef(tmp_path, **spec))
    assert not report["pass"]
    assert rule in rules(report), report["findings"]
    assert any(f["rule"] == rule and f["section"] == section for f in report["findings"])


def test_check_outputs_must_sum_to_the_vocabulary(tmp_path):
    # embeddings.bin has 64 rows; three shards of 64 // 3 = 21 give 63 logits.
    report = check_json(write_hef(tmp_path, vocab=64, shards=3))
    assert any(f["rule"] == "outputs" and f["section"] == "6, 9" and "sum to 63" in f["message"]
               for f in report["findings"])


def test_check_input_widths_follow_hailo_config(tmp_path):
    cfg = hw.genai_spec()["config"]
    cfg["pre_process_params"]["num_attention_heads"] = 8  # the HEF was built for 4 heads
    report = check_json(write_hef(tmp_path, config=cfg))
    msgs = [f["message"] for f in report["findings"] if f["rule"] == "input-widths"]
    assert any("input_layer2" in m and "num_attention_heads 8 x kv_cache_size 16" in m for m in msgs)
    assert any("input_layer3" in m for m in msgs) and not any("input_layer5" in m for m in msgs)
    cfg = hw.genai_spec()["config"]
    cfg["pre_process_params"]["prefill_input_tokens_count"] = 4
    report = check_json(write_hef(tmp_path, "p.hef", config=cfg))
    assert any("rows" in f["message"] and "prefill_input_tokens_count is 4" in f["message"]
               for f in report["findings"])


def test_check_suffixes_come_from_hailo_config(tmp_path):
    cfg = hw.genai_spec()["config"]
    cfg["input_layers_names_suffixes"]["pe_q_cos"] = "input_layer9"
    report = check_json(write_hef(tmp_path, config=cfg))
    assert any(f["rule"] == "inputs" and "input_layer9" in f["message"] for f in report["findings"])


def manifest(**over):
    m = {"cache_size": 16, "prefill": 8, "theta_length": 8, "lm_head_shards": [32, 32],
         "dims": {"hidden": 32, "vocab": 64, "heads": 4, "kv_heads": 2},
         "pe_tiles": {"q": 4, "k": 2}, "dfc": {"network_groups": ["tiny__prefill", "tiny__tbt"]}}
    m.update(over)
    return m


def test_check_against_a_real_export(tmp_path):
    """A HEF built around what `llm2hef export` wrote (its hailo-config.json, tokenizer.json, theta length,
    shapes) passes check --manifest; the same HEF with one more logits shard does not."""
    out = tmp_path / "export"
    r = run("export", REPO / "tests" / "fixtures" / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16,
            "--no-progress")
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "manifest.json").read_text())
    spec = dict(scope=m["dfc"]["scope"], vocab=m["dims"]["vocab"], hidden=m["dims"]["hidden"],
                heads=m["pe_tiles"]["q"], kv_heads=m["pe_tiles"]["k"], theta_len=m["theta_length"],
                cache=m["cache_size"], prefill=m["prefill"], shards=len(m["lm_head_shards"]),
                config=(out / "resources" / "hailo-config.json").read_text(),
                tokenizer=(out / "resources" / "tokenizer.json").read_text())
    good = tmp_path / "good.hef"
    good.write_bytes(hw.genai_hef(**spec))
    report = check_json(good, "--manifest", out / "manifest.json")
    assert report["pass"] and report["warnings"] == 0, report["findings"]
    assert "manifest" in report["passed"]
    spec["shards"] = 2 * len(m["lm_head_shards"])
    bad = tmp_path / "bad.hef"
    bad.write_bytes(hw.genai_hef(**spec))
    report = check_json(bad, "--manifest", out / "manifest.json")
    assert any(f["rule"] == "manifest" and "lm_head_shards" in f["message"] for f in report["findings"])


def test_check_with_manifest(tmp_path):
    path = write_hef(tmp_path)
    good = tmp_path / "manifest.json"
    good.write_text(json.dumps(manifest()))
    report = check_json(path, "--manifest", good)
    assert report["pass"] and "manifest" in report["passed"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(manifest(dims={"hidden": 48, "vocab": 64}, dfc={"network_groups": ["x__prefill", "x__tbt"]})))
    report = check_json(path, "--manifest", bad)
    msgs = [f["message"] for f in report["findings"] if f["rule"] == "manifest"]
    assert any("dims.hidden" in m and "32" in m and "48" in m for m in msgs)
    assert any("network groups" in m for m in msgs)
    (tmp_path / "junk.json").write_text("{")
    r = run("hef", "check", path, "--manifest", tmp_path / "junk.json")
    assert r.returncode == 3 and "junk.json" in r.stderr


# --- (c) corrupted files -------------------------------------------------------------

EXPECTED_WORDS = {
    "bad-magic": "magic",
    "bad-version": "version",
    "truncated-header": "too short",
    "proto-size-beyond-file": "hef_proto_size",
    "truncated-file": "end of the file",  # with a proto hash: found by the resource bounds
    "truncated-file-no-proto-hash": "do not match the file size",
    "proto-checksum": "proto_xxh3_64bits",
    "truncated-proto": "ProtoHEFHef",
    "resource-beyond-file": "external_resources",
    "padding-beyond-file": "hef_padding_size",
}


@pytest.mark.parametrize("kind", hw.CORRUPTIONS)
def test_corrupted_hefs_fail_cleanly(tmp_path, kind):
    path = tmp_path / f"{kind}.hef"
    path.write_bytes(hw.corrupted(kind))
    for cmd in (("hef", "inspect", path), ("hef", "check", path)):
        r = run(*cmd)
        if kind == "resource-checksum":
            assert r.returncode == 1, r.stdout + r.stderr
            continue
        assert r.returncode == 3, (kind, r.returncode, r.stdout, r.stderr)
        assert str(path) in r.stderr
        assert EXPECTED_WORDS[kind] in r.stderr, r.stderr
    if kind == "resource-checksum":
        _, info = inspect_json(path)
        assert next(x for x in info["resources"] if x["name"] == "tokenizer.json")["checksum"] == "mismatch"


def test_missing_and_non_hef_files(tmp_path):
    r = run("hef", "inspect", tmp_path / "nope.hef")
    assert r.returncode == 3 and "nope.hef" in r.stderr
    (tmp_path / "empty.hef").write_bytes(b"")
    assert run("hef", "inspect", tmp_path / "empty.hef").returncode == 3


# --- (d) set-config -----------------------------------------------------------------

def sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_set_config_round_trip(tmp_path):
    src = write_hef(tmp_path)
    before = sha(src)
    new_cfg = hw.genai_spec()["config"]
    new_cfg["eos_token_id"] = 5
    new_cfg["chat_template"] = "{{ messages }}" * 50
    (tmp_path / "new.json").write_text(json.dumps(new_cfg))
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, tmp_path / "new.json", "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["new_size"] == out.stat().st_size
    assert sha(src) == before  # the input is untouched
    r, info = inspect_json(out, "--verify-all")
    assert r.returncode == 0 and info["ok"]
    assert info["checksums"]["proto"] == "ok" and info["checksums"]["file"] == "ok"
    assert all(x["checksum"] == "ok" for x in info["resources"])
    cfg = next(x for x in info["resources"] if x["name"] == "hailo-config.json")
    data = out.read_bytes()[cfg["file_offset"]:cfg["file_offset"] + cfg["size"]]
    assert json.loads(data)["eos_token_id"] == 5
    # The untouched resources are byte-identical to the input's.
    _, old = inspect_json(src)
    for name in ("tokenizer.json", "embeddings.bin", "rope_theta_data.bin"):
        a = next(x for x in old["resources"] if x["name"] == name)
        b = next(x for x in info["resources"] if x["name"] == name)
        assert src.read_bytes()[a["file_offset"]:a["file_offset"] + a["size"]] == \
            data_slice(out, b)
    # The unknown top-level proto field (99) survived.
    assert b"future field kept verbatim" in out.read_bytes()
    assert check_json(out)["pass"]
    # Again, on the output.
    new_cfg["eos_token_id"] = 6
    (tmp_path / "new2.json").write_text(json.dumps(new_cfg))
    out2 = tmp_path / "out2.hef"
    assert run("hef", "set-config", out, tmp_path / "new2.json", "-o", out2).returncode == 0
    r, info2 = inspect_json(out2, "--verify-all")
    assert r.returncode == 0 and info2["checksums"]["file"] == "ok"
    cfg2 = next(x for x in info2["resources"] if x["name"] == "hailo-config.json")
    assert json.loads(out2.read_bytes()[cfg2["file_offset"]:cfg2["file_offset"] + cfg2["size"]])["eos_token_id"] == 6


def data_slice(path, res):
    return Path(path).read_bytes()[res["file_offset"]:res["file_offset"] + res["size"]]


def test_set_config_refusals(tmp_path):
    src = write_hef(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"eos_token_id": 1, "pre_process_params": {"prefill_input_tokens_size": 8}}))
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, bad, "-o", out)
    assert r.returncode == 3 and "prefill_input_tokens_size" in r.stderr
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "model.hef"]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(hw.genai_spec()["config"]))
    assert run("hef", "set-config", src, good).returncode == 2  # no -o
    assert run("hef", "set-config", src, good, "-o", src).returncode == 2
    out.write_bytes(b"x")
    assert run("hef", "set-config", src, good, "-o", out).returncode == 2  # exists, no --force
    assert run("hef", "set-config", src, good, "-o", out, "--force").returncode == 0
    v2 = write_hef(tmp_path, "v2.hef", version=2)
    r = run("hef", "set-config", v2, good, "-o", tmp_path / "v2out.hef")
    assert r.returncode == 4 and "version 3" in r.stderr
