"""`llm2hef hef inspect | check | set-config` on HEFs written from the format facts.

The HEFs come from tools/fixtures/hef_writer.py, which encodes the header and
the protobuf by hand (field numbers of hailo-contract.md section 10), not with
llm2hef's reader. Covered:
(a) inspect reads headers v0-v3, both network-group layouts, the six inputs,
    sharded outputs, cache edges and resources with checksum status;
(b) check passes the writer's default HEF (what DFC 5.x writes as far as
    hailort v5.2.0 shows it) on every rule, and fails each rule of hailort's
    on a HEF broken for that rule alone, naming rule, hailort source and
    section; names are read from network_group_metadata, never field 10;
    --hailort; --manifest agreement;
(c) corrupted files (bad magic, sizes beyond the file, wrong checksums,
    truncated proto) exit 3 or 1 with a message naming the field, never a crash;
(d) set-config writes a HEF that passes check and inspect --verify-all, equal
    to its input field by field but for the config, offsets, hashes and sizes,
    with tokenizer.json and embeddings.bin last; it refuses configs of the
    wrong JSON types or that contradict the HEF, leaving the input untouched;
(e) progress bars only on a terminal.
"""
from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import struct
import subprocess
from pathlib import Path

import pytest

import hef_writer as hw  # noqa: E402
import manifest_fixture as mf  # noqa: E402
from llm2hef_cli import BIN, FIXTURES, llm2hef, sound


def run(*args):
    return sound(llm2hef(*args, timeout=120))


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
    assert r.returncode == (0 if report["ok"] else 1)
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
    assert info["sdk_version"] == "5.2.0"
    assert [g["name"] for g in info["network_groups"]] == ["tiny__prefill", "tiny__tbt"]
    assert {r["name"] for r in info["resources"]} == (set() if version == 0 else {
        "hailo-config.json", "rope_theta_data.bin", "tokenizer.json", "embeddings.bin"})
    expected_file = {0: "not verified (MD5 of v0 headers is not implemented)", 1: "ok", 2: "ok", 3: "ok"}[version]
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

ALL_RULES = ("hef-version", "proto-hash", "hw-arch", "extensions", "strict-version", "net-flow", "network-groups",
             "resources", "checksums", "resource-order", "hailo-config", "stop-tokens", "chat-template",
             "chat-template-render", "chat-template-ollama", "tokenizer", "theta",
             "inputs", "input-widths", "embeddings", "token-ids", "outputs")


def test_check_passes_the_default_writer_hef_on_every_rule(tmp_path):
    report = check_json(write_hef(tmp_path))
    assert report["ok"] and report["findings"] == [], report["findings"]
    assert report["derived"]["vocab"] == 64 and report["derived"]["hidden"] == 32
    assert report["derived"]["theta_length"] == 8
    assert report["derived"]["network_groups"] == ["tiny__prefill", "tiny__tbt"]
    assert report["derived"]["hailort"] == "5.2"
    assert set(report["passed"]) == set(ALL_RULES)
    text = run("hef", "check", write_hef(tmp_path, "b.hef"))
    assert text.returncode == 0 and "PASS" in text.stdout


def cfg_with(**changes):
    """The writer's default hailo-config.json with top-level keys replaced (None removes one)."""
    cfg = hw.genai_spec()["config"]
    for k, v in changes.items():
        if v is None:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    return cfg


# One HEF per rule of hailort's, broken for that rule alone:
# (id, writer overrides, rule, section, words the message must hold: the hailort behaviour and its source).
BROKEN = [
    ("names-in-field-10-only", dict(names=(None, None), field10=("tiny__prefill", "tiny__tbt")),
     "network-groups", "9", ["network_group_metadata", "hef.cpp 3498-3504", "never read"]),
    ("names-metadata-wrong", dict(names=("tiny__prefill_x", "tiny__tbt_x"), field10=("tiny__prefill", "tiny__tbt")),
     "network-groups", "9", ["__prefill", "llm_inference_manager.cpp"]),
    ("three-groups", dict(extra_groups=1), "network-groups", "8, 9", ["exactly two", "llm_server.cpp 46-68"]),
    ("unknown-extension", dict(extensions=[13, 26, 31, 35, 99]), "extensions", "10",
     ["FROM_THE_FUTURE", "SUPPORTED_EXTENSIONS", "hef_internal.hpp 202-237"]),
    ("test-only-extension", dict(extensions=[7, 13, 26, 31, 35]), "extensions", "10", ["TEST_ONE", "hef.cpp 445"]),
    ("no-periph-extension", dict(extensions=[13, 31, 35]), "extensions", "10",
     ["PERIPH_CALCULATION_IN_HAILORT (26)", "outdated", "hef.cpp 458-459"]),
    ("proto-header-version-0", dict(proto_version=0), "extensions", "10", ["included_features", "hef.cpp 1925"]),
    ("strict-version-5.3", dict(sdk=(5, 3, 0)), "strict-version", "10",
     ["DFC 5.3", "HailoRT 5.2", "HAILO_IGNORE_STRICT_VERSION", "hef.cpp 3588-3602"]),
    ("header-version-2", dict(version=2), "hef-version", "9", ["version 3", "hef.cpp 4266-4268"]),
    ("no-proto-hash", dict(proto_hash=False), "proto-hash", "9",
     ["proto_xxh3_64bits is 0", "llm_server.cpp 472-475", "hef.cpp 598-604"]),
    ("hw-arch-5", dict(hw_arch=5), "hw-arch", "10", ["maps to no device", "device_internal.cpp 736-762"]),
    ("hw-arch-hailo8", dict(hw_arch=0), "hw-arch", "10", ["Hailo-8", "device_internal.cpp 736-762"]),
    ("net-flow-without-core-op", dict(via_core_op=False, extensions=[13, 26, 31, 35]), "net-flow", "10",
     ["ops[].core_op", "hef.cpp 945-953"]),
    ("missing-tokenizer", dict(drop=("tokenizer.json",)), "resources", "6", ["tokenizer.json", "HAILO_NOT_FOUND"]),
    ("resource-checksum", dict(digest_override={"hailo-config.json": 99}), "checksums", "10",
     ["checksum does not match", "hef.cpp 4036-4040"]),
    ("config-last", dict(order=("rope_theta_data.bin", "tokenizer.json", "embeddings.bin", "hailo-config.json")),
     "resource-order", "9", ["optimize_memory_on_device", "hailo-config.json", "genai/utils.hpp 219-224",
                             "must be the last"], ["--optimize-memory-on-device"]),
    ("stop-token-bare-int", dict(config=cfg_with(stop_token_id=1)), "hailo-config", "6",
     ["stop_token_id", "std::vector<int>", "throws", "llm_server.cpp 108-196"]),
    ("chat-template-number", dict(config=cfg_with(chat_template=7)), "hailo-config", "6",
     ["chat_template", "std::string", "throws"]),
    ("reasoning-id-string", dict(config=cfg_with(end_of_reasoning_token_id="</think>")), "hailo-config", "6",
     ["end_of_reasoning_token_id", "get<int>()"]),
    ("temperature-string", dict(config=cfg_with(default_generation_params={"temperature": "0.7"})),
     "hailo-config", "6", ["temperature", "float", "throws"]),
    ("do-sample-int", dict(config=cfg_with(default_generation_params={"do_sample": 1})), "hailo-config", "6",
     ["do_sample", "bool", "throws"]),
    ("top-k-negative", dict(config=cfg_with(default_generation_params={"top_k": -1})), "hailo-config", "6",
     ["top_k", "uint32_t", "wraps"]),
    ("max-new-tokens-float", dict(config=cfg_with(default_generation_params={"max_new_tokens": 64.5})),
     "hailo-config", "6", ["max_new_tokens", "truncates"]),
    ("generation-params-list", dict(config=cfg_with(default_generation_params=[1])), "hailo-config", "6",
     ["not an object", "default"]),
    ("mrope-section-int", dict(config=cfg_with(pre_process_params=dict(
        hw.genai_spec()["config"]["pre_process_params"], mrope_section=4))), "hailo-config", "6",
     ["mrope_section", "std::vector<int>"]),
    ("no-eos", dict(config=cfg_with(eos_token_id=None)), "hailo-config", "6",
     ["eos_token_id is missing", "HAILO_INVALID_ARGUMENT"]),
    # A HEF compiled for 96 rows, so only the spelling (not the silent default) is wrong.
    ("prefill-size-spelling", dict(prefill=96, config=cfg_with(pre_process_params={
        "prefill_input_tokens_size": 8, "kv_cache_size": 16, "num_attention_heads": 4, "num_key_value_heads": 2})),
     "hailo-config", "6", ["prefill_input_tokens_size", "96"]),
    # Compiled for the runtime's defaults, so the unreadable config is the only fault.
    ("config-not-json", dict(prefill=96, cache=2048, heads=12, kv_heads=2, config="{broken"), "hailo-config", "6",
     ["not valid JSON", "genai/utils.hpp 156-161"]),
    ("eos-outside-vocab", dict(config=cfg_with(eos_token_id=64, stop_token_id=[64])), "token-ids", "6",
     ["eos_token_id 64", "64 rows"]),
    ("tokenizer-not-json", dict(tokenizer="not json"), "tokenizer", "6", ["tokenizer.json"]),
    ("theta-odd", dict(theta_len=7), "theta", "9", ["odd"]),
    ("embeddings-uint8", dict(emb_bytes=1), "inputs", "9", ["UINT16"]),
]


@pytest.mark.parametrize("spec,rule,section,words,flags", [(b[1:] + ([],))[:5] for b in BROKEN],
                         ids=[b[0] for b in BROKEN])
def test_check_fails_each_rule_alone(tmp_path, spec, rule, section, words, flags):
    report = check_json(write_hef(tmp_path, **spec), *flags)
    assert not report["ok"]
    assert rules(report) == {rule}, report["findings"]
    mine = [f for f in report["findings"] if f["rule"] == rule and f["severity"] == "error"]
    assert any(f["section"] == section for f in mine), mine
    text = " ".join(f["message"] for f in mine)
    for w in words:
        assert w in text, (w, text)
    # The text report names rule and section too.
    out = run("hef", "check", tmp_path / "model.hef", *flags).stdout
    assert f"[{rule}, section {section}]" in out and "FAIL" in out


@pytest.mark.parametrize("config,words", [
    (cfg_with(stop_token_id=None), "stop_token_id is missing"),
    (cfg_with(stop_token_id=[2]), "does not contain eos_token_id 1"),
])
def test_check_warns_when_generation_would_not_stop_at_eos(tmp_path, config, words):
    report = check_json(write_hef(tmp_path, config=config))
    assert report["ok"] and rules(report) == set() and rules(report, "warning") == {"stop-tokens"}
    assert any(words in f["message"] and "llm_server.cpp 821-855" in f["message"] for f in report["findings"])


@pytest.mark.parametrize("order", [
    ("rope_theta_data.bin", "tokenizer.json", "embeddings.bin", "hailo-config.json"),  # config last
    ("tokenizer.json", "hailo-config.json", "embeddings.bin", "rope_theta_data.bin"),  # mixed
])
def test_resource_order_is_an_error_only_with_optimize_memory_on_device(tmp_path, order):
    # Only optimize_memory_on_device=True keeps tokenizer.json and embeddings.bin
    # on the host and shrinks the server's buffer (hef.cpp 4285-4365). It is
    # off by default (LLMParams, llm.hpp 42) and in hailo-ollama (a
    # value-initialized LLMParams, MZG generation_context.cpp 124), which send
    # the whole file: a warning then.
    path = write_hef(tmp_path, order=order)
    report = check_json(path)
    assert report["ok"] and rules(report) == set(), report["findings"]
    assert rules(report, "warning") == {"resource-order"}
    warning = next(f["message"] for f in report["findings"] if f["rule"] == "resource-order")
    assert "--optimize-memory-on-device" in warning and "generation_context.cpp 124" in warning
    text = run("hef", "check", path)
    assert text.returncode == 0 and "warning [resource-order, section 9]" in text.stdout and "PASS" in text.stdout
    strict = check_json(path, "--optimize-memory-on-device")
    assert not strict["ok"] and rules(strict) == {"resource-order"}
    assert run("hef", "check", path, "--optimize-memory-on-device").returncode == 1
    # The writer's default layout (tokenizer and embeddings last) passes both ways.
    good = write_hef(tmp_path, "good.hef")
    assert check_json(good, "--optimize-memory-on-device")["findings"] == []


def test_check_judges_names_by_the_metadata_not_field_10(tmp_path):
    # hailort reads network_group_metadata.network_group_name; field 10 is never read.
    path = write_hef(tmp_path, field10=("something__else", "unrelated"))
    report = check_json(path)
    assert report["ok"] and rules(report) == set() and rules(report, "warning") == set(), report["findings"]
    infos = [f for f in report["findings"] if f["severity"] == "info"]
    assert len(infos) == 2 and all("field 10" in f["message"] for f in infos)
    _, info = inspect_json(path)
    assert [g["name"] for g in info["network_groups"]] == ["tiny__prefill", "tiny__tbt"]
    assert [g["field10_name"] for g in info["network_groups"]] == ["something__else", "unrelated"]
    assert all(g["name_source"] == "network_group_metadata.network_group_name" for g in info["network_groups"])


def test_check_strict_versioning_follows_hailort_option(tmp_path):
    path = write_hef(tmp_path, sdk=(5, 3, 0))
    assert not check_json(path)["ok"]
    assert check_json(path, "--hailort", "5.3")["ok"]
    assert rules(check_json(write_hef(tmp_path, "b.hef"), "--hailort", "5.3")) == {"strict-version"}
    # Without STRICT_RUNTIME_VERSIONING the versions may differ.
    assert check_json(write_hef(tmp_path, "c.hef", sdk=(5, 3, 0), extensions=[13, 26, 31]))["ok"]
    for bad in ("five", "5", "5.2.x"):
        r = run("hef", "check", path, "--hailort", bad)
        assert r.returncode == 2 and "--hailort" in r.stderr


@pytest.mark.parametrize("arch", [103, 104, 105])
def test_check_accepts_every_arch_hailort_runs_on_hailo10h(tmp_path, arch):
    assert check_json(write_hef(tmp_path, hw_arch=arch))["ok"]


def test_check_contexts_inline_without_net_flow_pass(tmp_path):
    # The layout without HAILO_NET_FLOW: contexts directly in the group.
    report = check_json(write_hef(tmp_path, via_core_op=False))
    assert report["ok"] and report["findings"] == [], report["findings"]


def test_check_v1_crc_is_verified(tmp_path):
    good = write_hef(tmp_path, "v1.hef", version=1)
    assert rules(check_json(good)) == {"hef-version"}
    data = bytearray(good.read_bytes())
    data[-1] ^= 0x01  # in embeddings.bin: the CRC (and the resource's XXH3) no longer match
    bad = tmp_path / "v1bad.hef"
    bad.write_bytes(bytes(data))
    report = check_json(bad, "--verify-all")
    assert rules(report) == {"hef-version", "checksums"}
    assert any("CRC-32" in f["message"] and "hef.cpp 402-443" in f["message"] for f in report["findings"])
    r, info = inspect_json(bad, "--verify-all")
    assert r.returncode == 1 and info["checksums"]["file"] == "mismatch" and info["checksums"]["file_kind"] == "crc32"
    # Only the whole-file CRC broken: the stored value changed, the bytes not.
    data = bytearray(good.read_bytes())
    data[12:16] = struct.pack(">I", (struct.unpack(">I", data[12:16])[0] + 1) & 0xFFFFFFFF)
    bad.write_bytes(bytes(data))
    r, info = inspect_json(bad, "--verify-all")
    assert r.returncode == 1 and info["checksums"]["file"] == "mismatch"
    assert all(x["checksum"] == "ok" for x in info["resources"])


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


def manifest(hidden=32, groups=("tiny__prefill", "tiny__tbt")):
    m = mf.manifest(hidden=hidden, layers=1, vocab=64, heads=4, kv_heads=2, head_dim=8, cache=16, prefill=8,
                    theta_length=8, shards=[32, 32])
    m["dfc"]["network_groups"] = list(groups)
    return m


def test_check_against_a_real_export(tmp_path):
    """A HEF built around what `llm2hef export` wrote (its hailo-config.json, tokenizer.json, theta length,
    shapes) passes check --manifest; the same HEF with one more logits shard does not."""
    out = tmp_path / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16,
            "--no-progress")
    assert r.returncode == 0, r.stderr
    m = json.loads((out / "manifest.json").read_text())
    spec = hw.spec_from_export(out)
    good = tmp_path / "good.hef"
    good.write_bytes(hw.genai_hef(**spec))
    report = check_json(good, "--manifest", out / "manifest.json")
    assert report["ok"] and report["warnings"] == 0, report["findings"]
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
    assert report["ok"] and "manifest" in report["passed"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(manifest(hidden=48, groups=["x__prefill", "x__tbt"])))
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


LOCAL = ("tokenizer.json", "embeddings.bin")


def assert_local_resources_last(data: bytes):
    """What optimize_memory_on_device needs (hef.cpp 4359-4360, genai/utils.hpp 219-224): every chunk the client
    sends fits in file size - tokenizer.json - embeddings.bin, and those two are the last bytes."""
    h = hw.read_header(data)
    res = hw.resources_of(data)
    zero = 56 + h["proto_size"] + h["padding"]
    buffer = len(data) - sum(r["size"] for r in res if r["name"] in LOCAL)
    ends = [zero + h["ccws_size_with_padding"] - h["padding"]]
    ends += [r["file_offset"] + r["size"] for r in res if r["name"] not in LOCAL]
    assert max(ends) <= buffer, (ends, buffer)
    last = sorted(res, key=lambda r: r["file_offset"])[-2:]
    assert {r["name"] for r in last} == set(LOCAL)
    assert last[-1]["file_offset"] + last[-1]["size"] == len(data)
    assert last[0]["file_offset"] + last[0]["size"] <= last[1]["file_offset"]


def assert_same_but_config(src: bytes, out: bytes, new_cfg: bytes):
    """set-config's output equals its input field by field, except the config resource, the offsets of the
    resources it moved (their bytes unchanged), the hash fields and the sizes."""
    hi, ho = hw.read_header(src), hw.read_header(out)
    assert ho["magic"] == hi["magic"] and ho["version"] == hi["version"] == 3 and ho["reserved"] == hi["reserved"]
    ccws_i = hi["ccws_size_with_padding"] - hi["padding"]
    ccws_o = ho["ccws_size_with_padding"] - ho["padding"]
    zi, zo = 56 + hi["proto_size"] + hi["padding"], 56 + ho["proto_size"] + ho["padding"]
    assert ccws_o == ccws_i and out[zo:zo + ccws_o] == src[zi:zi + ccws_i]
    assert zo % 4096 == zi % 4096  # the CCWs keep their alignment
    # Sizes and hashes, recomputed here.
    proto_o = out[56:56 + ho["proto_size"]]
    assert 56 + ho["proto_size"] + ho["ccws_size_with_padding"] + ho["additional_info_size"] == len(out)
    assert ho["proto_xxh3"] == hw.xxh3(proto_o) != 0
    assert ho["xxh3"] == hw.xxh3(out[56:])
    assert out[56 + ho["proto_size"]:zo] == bytes(ho["padding"])
    # The proto: every top-level field but the resources byte for byte, in order.
    fi, fo = hw.read_fields(src[56:56 + hi["proto_size"]]), hw.read_fields(proto_o)
    assert [f[0] for f in fi] == [f[0] for f in fo]
    for a, b in zip(fi, fo):
        if a[0] != 7:
            assert a[3] == b[3], a[0]
    ri, ro = hw.resources_of(src), hw.resources_of(out)
    assert [r["name"] for r in ri] == [r["name"] for r in ro]
    for a, b in zip(ri, ro):
        got = out[b["file_offset"]:b["file_offset"] + b["size"]]
        if a["name"] == "hailo-config.json":
            assert got == new_cfg and b["size"] == len(new_cfg) and b["xxhash"] == hw.xxh3(new_cfg)
        else:
            assert b["size"] == a["size"] and b["xxhash"] == a["xxhash"]
            assert got == src[a["file_offset"]:a["file_offset"] + a["size"]], a["name"]
        extra_a = {k: v for k, v in a.items() if k not in ("raw", "offset", "file_offset", "size", "xxhash")}
        extra_b = {k: v for k, v in b.items() if k not in ("raw", "offset", "file_offset", "size", "xxhash")}
        assert extra_a == extra_b


def new_config_file(tmp_path, name="new.json", **changes):
    cfg = cfg_with(**changes)
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return p


@pytest.mark.parametrize("layout", [
    dict(),  # the writer's default: config, theta, tokenizer, embeddings
    dict(order=("rope_theta_data.bin", "tokenizer.json", "embeddings.bin", "hailo-config.json")),  # config last
    dict(order=("tokenizer.json", "hailo-config.json", "embeddings.bin", "rope_theta_data.bin")),  # mixed
    dict(proto_hash=False),
])
def test_set_config_output_keeps_tokenizer_and_embeddings_last(tmp_path, layout):
    src = write_hef(tmp_path, **layout)
    before = sha(src)
    cfg = new_config_file(tmp_path, eos_token_id=5, stop_token_id=[5, 6], chat_template="{{ messages }}" * 50)
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, cfg, "-o", out, "--json")
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["new_size"] == out.stat().st_size
    assert sha(src) == before  # the input is untouched
    data = out.read_bytes()
    assert_local_resources_last(data)
    assert_same_but_config(src.read_bytes(), data, cfg.read_bytes())
    r, info = inspect_json(out, "--verify-all")
    assert r.returncode == 0 and info["ok"]
    assert info["checksums"]["proto"] == "ok" and info["checksums"]["file"] == "ok"
    assert all(x["checksum"] == "ok" for x in info["resources"])
    report = check_json(out)
    assert report["ok"] and report["findings"] == [], report["findings"]
    # The unknown top-level proto field (99) survived.
    assert b"future field kept verbatim" in data
    # Again, on the output: no dead space piles up.
    cfg2 = new_config_file(tmp_path, "new2.json", eos_token_id=6, stop_token_id=[6])
    out2 = tmp_path / "out2.hef"
    assert run("hef", "set-config", out, cfg2, "-o", out2).returncode == 0
    data2 = out2.read_bytes()
    assert_local_resources_last(data2)
    assert_same_but_config(data, data2, cfg2.read_bytes())
    assert check_json(out2)["ok"]
    assert len(data2) <= len(data) + 8


def data_slice(path, res):
    return Path(path).read_bytes()[res["file_offset"]:res["file_offset"] + res["size"]]


def refused(tmp_path, src, cfg_path, *words):
    out = tmp_path / "out.hef"
    before = sha(src)
    listing = sorted(p.name for p in tmp_path.iterdir())
    r = run("hef", "set-config", src, cfg_path, "-o", out)
    assert r.returncode == 3, (r.returncode, r.stderr)
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert sha(src) == before and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # no temporary file left behind


@pytest.mark.parametrize("changes,words", [
    (dict(stop_token_id=2), ["stop_token_id", "std::vector<int>", "throws"]),
    (dict(chat_template=["a"]), ["chat_template", "std::string"]),
    (dict(eos_token_id="1"), ["eos_token_id", "get<int>()"]),
    (dict(default_generation_params={"temperature": "warm"}), ["temperature"]),
    (dict(default_generation_params={"do_sample": "yes"}), ["do_sample", "bool"]),
    (dict(begin_of_reasoning_token_id=1.5), ["begin_of_reasoning_token_id", "truncates"]),
    (dict(pre_process_params={"prefill_input_tokens_size": 8}), ["prefill_input_tokens_size"]),
    (dict(eos_token_id=None), ["eos_token_id is missing"]),
])
def test_set_config_refuses_wrong_json_types(tmp_path, changes, words):
    refused(tmp_path, write_hef(tmp_path), new_config_file(tmp_path, **changes), "[hailo-config, section 6]", *words)


def pp(**changes):
    base = dict(hw.genai_spec()["config"]["pre_process_params"])
    base.update(changes)
    return base


@pytest.mark.parametrize("changes,rule,words", [
    (dict(pre_process_params=pp(num_attention_heads=8)), "input-widths", ["input_layer2", "num_attention_heads 8"]),
    (dict(pre_process_params=pp(kv_cache_size=32)), "input-widths", ["kv_cache_size 32"]),
    (dict(pre_process_params=pp(num_key_value_heads=4)), "input-widths", ["input_layer5"]),
    (dict(pre_process_params=pp(prefill_input_tokens_count=4)), "input-widths", ["prefill_input_tokens_count is 4"]),
    (dict(input_layers_names_suffixes={"pe_q_cos": "input_layer9"}), "inputs", ["input_layer9"]),
    (dict(eos_token_id=70, stop_token_id=[70]), "token-ids", ["eos_token_id 70", "64 rows"]),
    (dict(stop_token_id=[1, 64]), "token-ids", ["stop_token_id[1] 64"]),
])
def test_set_config_refuses_configs_that_contradict_the_hef(tmp_path, changes, rule, words):
    refused(tmp_path, write_hef(tmp_path), new_config_file(tmp_path, **changes), f"[{rule}, section", *words)


def test_set_config_warns_about_stop_tokens(tmp_path):
    src = write_hef(tmp_path)
    out = tmp_path / "out.hef"
    r = run("hef", "set-config", src, new_config_file(tmp_path, stop_token_id=None), "-o", out, "--json")
    assert r.returncode == 0 and "stop_token_id is missing" in r.stderr
    assert [f["rule"] for f in json.loads(r.stdout)["findings"]] == ["stop-tokens"]


def test_set_config_usage(tmp_path):
    src = write_hef(tmp_path)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(hw.genai_spec()["config"]))
    out = tmp_path / "out.hef"
    assert run("hef", "set-config", src, good).returncode == 2  # no -o
    assert run("hef", "set-config", src, good, "-o", src).returncode == 2
    out.write_bytes(b"x")
    assert run("hef", "set-config", src, good, "-o", out).returncode == 2  # exists, no --force
    assert run("hef", "set-config", src, good, "-o", out, "--force").returncode == 0
    v2 = write_hef(tmp_path, "v2.hef", version=2)
    r = run("hef", "set-config", v2, good, "-o", tmp_path / "v2out.hef")
    assert r.returncode == 4 and "version 3" in r.stderr


# --- (e) progress bars ------------------------------------------------------------------

def run_on_terminal(*args):
    """Runs llm2hef with stderr on a pseudo-terminal; returns (status, what it drew there)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([str(BIN), *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    drawn = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    return p.wait(timeout=60), drawn


def test_progress_bars_only_on_a_terminal(tmp_path):
    src = write_hef(tmp_path)
    cfg = new_config_file(tmp_path)
    r = run("hef", "set-config", src, cfg, "-o", tmp_path / "a.hef")
    assert r.returncode == 0 and "\r" not in r.stderr and "[" not in r.stderr, repr(r.stderr)
    status, drawn = run_on_terminal("hef", "set-config", src, cfg, "-o", tmp_path / "b.hef")
    assert status == 0 and b"\r" in drawn and b"writing" in drawn, drawn
    status, drawn = run_on_terminal("hef", "set-config", src, cfg, "-o", tmp_path / "c.hef", "--no-progress")
    assert status == 0 and b"\r" not in drawn
    # inspect --verify-all draws a bar for large hashing work, and only on a terminal.
    big = write_hef(tmp_path, "big.hef", vocab=8192, hidden=4160, heads=2, kv_heads=1, shards=2)
    r = run("hef", "inspect", big, "--verify-all")
    assert r.returncode == 0 and "\r" not in r.stderr, repr(r.stderr)
    status, drawn = run_on_terminal("hef", "inspect", big, "--verify-all")
    assert status == 0 and b"verifying checksums" in drawn
