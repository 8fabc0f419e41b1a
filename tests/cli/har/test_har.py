"""`llm2hef har inspect|fix|lines` on tiny HARs built by har_fixtures.py,
each reproducing a defect of hailo-contract.md section 5; and malformed or
malicious tars, which must fail with exit 3 and a message, never a crash."""
from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest

import har_fixtures as hf  # noqa: E402
from llm2hef_cli import BIN, FIXTURES
from llm2hef_cli import llm2hef as run

PE = {"input_layer3": hf.NKV, "input_layer4": hf.NHEAD, "input_layer5": hf.NKV, "input_layer6": hf.NHEAD}


def digest(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def fix_json(*args):
    r = run("har", "fix", *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_name(report):
    return {f["name"]: f for f in report["fixups"]}


@pytest.fixture
def parsed(tmp_path):
    hn, w = hf.parsed_har()
    har = hf.write_har(tmp_path / "tiny.har", "tiny", hn, w)
    man = tmp_path / "manifest.json"
    m = hf.manifest()
    man.write_text(json.dumps(m))
    return har, man, hn, w


# ---------------------------------------------------------------- inspect

def test_inspect_json_reports_the_hn(parsed):
    har, _, hn, _ = parsed
    r = run("har", "inspect", har, "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["state"] == "hailo_model" and rep["stage"] == "before_optimize"
    assert rep["hn_member"] == "tiny.hn" and rep["weights_member"] == "tiny.npz"
    assert rep["scopes"] == ["tiny"]
    counts = {}
    for layer in hn["layers"].values():
        counts[layer["type"]] = counts.get(layer["type"], 0) + 1
    assert rep["layers_by_type"] == counts
    assert [i["name"] for i in rep["inputs"]] == ["tiny/input_layer%d" % k for k in range(1, 7)]
    assert rep["inputs"][1]["shape"] == [-1, 1, hf.SEQ, hf.NHEAD * hf.SEQ]
    assert rep["inputs"][0]["original_names"] == hn["layers"]["tiny/input_layer1"]["original_names"]
    assert [o["name"] for o in rep["outputs"]] == hn["net_params"]["output_layers_order"]
    assert rep["cache_layers"] == []
    text = run("har", "inspect", har)
    assert text.returncode == 0 and "tiny/input_layer2" in text.stdout and "before_optimize" in text.stdout


def test_inspect_lists_cache_layers_and_groups(tmp_path):
    har = hf.write_har(tmp_path / "q.har", "tiny", hf.quantized_hn(), None, state="quantized_model")
    rep = json.loads(run("har", "inspect", har, "--json").stdout)
    assert rep["stage"] == "after_optimize"
    assert rep["scopes"] == ["tiny", "tiny__prefill", "tiny__tbt"]
    assert rep["network_groups"] == ["tiny__prefill", "tiny__tbt"] and rep["base_scope"] == "tiny"
    assert rep["scope_problem"] is None
    assert [c["name"] for c in rep["cache_layers"]] == sorted(
        g + "/" + n for g in rep["network_groups"] for n in ["cache_input_layer1", "cache_output_layer1"])
    text = run("har", "inspect", har).stdout
    assert "network groups: tiny__prefill, tiny__tbt (base scope tiny ignored)" in text


def test_main_hn_is_not_a_variant(tmp_path):
    hn, w = hf.parsed_har()
    decoy = json.dumps({"name": "decoy", "layers": {}}).encode()
    har = hf.write_har(tmp_path / "v.har", "tiny", hn, w, extra=[("tiny.native.hn", decoy), ("tiny.fp.hn", decoy)])
    rep = json.loads(run("har", "inspect", har, "--json").stdout)
    assert rep["hn_member"] == "tiny.hn" and rep["name"] == "tiny"
    roles = {m["name"]: m["role"] for m in rep["members"]}
    assert roles["tiny.native.hn"] == "hn-variant" and roles["tiny.fp.hn"] == "hn-variant"


def test_stage_from_hn_without_metadata(tmp_path):
    hn, w = hf.parsed_har()
    a = hf.write_har(tmp_path / "a.har", "tiny", hn, w, state=None)
    b = hf.write_har(tmp_path / "b.har", "tiny", hf.quantized_hn(), None, state=None)
    assert json.loads(run("har", "inspect", a, "--json").stdout)["stage"] == "before_optimize"
    assert json.loads(run("har", "inspect", b, "--json").stdout)["stage"] == "after_optimize"
    # judged by the scopes alone (no cache layers), with a short base name: "q__tbt" is a group too
    hn_q = hf.quantized_hn(net="q")
    for layer in hn_q["layers"].values():
        layer.pop("io_type", None)
    c = hf.write_har(tmp_path / "c.har", "q", hn_q, None, state=None)
    rep = json.loads(run("har", "inspect", c, "--json").stdout)
    assert rep["stage"] == "after_optimize" and rep["network_groups"] == ["q__prefill", "q__tbt"]


# ---------------------------------------------------------------- fix, before optimize

def test_rope_inputs_widened_and_tiling_convs_removed(parsed, tmp_path):
    har, man, hn0, w0 = parsed
    out = tmp_path / "fixed.har"
    rep = fix_json(har, "-o", out, "--manifest", man)
    assert len(by_name(rep)["rope-input-widening"]["changes"]) == 4
    _, hn, w = hf.read_har(out)
    layers = hn["layers"]
    for short, tiles in PE.items():
        name = "tiny/" + short
        tiler = hn0["layers"][name]["output"][0]
        assert tiler not in layers
        width = hf.HD * tiles
        assert layers[name]["input_shapes"] == [[-1, 1, hf.SEQ, width]]
        assert layers[name]["output_shapes"] == [[-1, 1, hf.SEQ, width]]
        assert layers[name]["output"] == hn0["layers"][tiler]["output"]
        for consumer in layers[name]["output"]:
            ins = layers[consumer]["input"]
            assert name in ins and tiler not in ins
            assert layers[consumer]["input_shapes"][ins.index(name)] == [-1, 1, hf.SEQ, width]
        assert not any(k.startswith(tiler + "/") for k in w)
    # every other array is untouched
    for k, v in w0.items():
        if k.split("/")[1] not in ("conv1", "conv2", "conv3", "conv4"):
            np.testing.assert_array_equal(w[k], v)


def test_mask_slices_rewired(parsed, tmp_path):
    har, man, hn0, _ = parsed
    out = tmp_path / "fixed.har"
    rep = fix_json(har, "-o", out, "--manifest", man)
    assert len(by_name(rep)["mask-wiring"]["changes"]) == 2
    _, hn, _ = hf.read_har(out)
    layers = hn["layers"]
    mask = "tiny/input_layer2"
    full = [-1, 1, hf.SEQ, hf.NHEAD * hf.SEQ]
    slices = [c for c in hn0["layers"][mask]["output"] if hn0["layers"][c]["type"] == "slice"]
    assert len(slices) == 2
    adds = [hn0["layers"][s]["output"][0] for s in slices]
    assert sorted(layers[mask]["output"]) == sorted(adds)
    for s, a in zip(slices, adds):
        assert s not in layers
        assert layers[a]["input"] == [hn0["layers"][a]["input"][0], mask]
        assert layers[a]["input_shapes"] == [full, full]
        assert layers[a]["params"]["input_repeats"] == [[1, 1, 1], [1, 1, 1]]
        assert "input_tiles" not in layers[a]["params"]


def test_mask_slices_feeding_no_ew_add_are_left_alone(tmp_path):
    # LFM2's conv layers slice one head's block of the mask into their shift
    # matrices (docs/lfm2.md): not the attention pattern, so not rewired.
    hn, w = hf.parsed_har()
    layers = hn["layers"]
    mask = "tiny/input_layer2"
    seq = hf.SEQ
    layers["tiny/slice_conv"] = {"type": "slice", "input": [mask], "output": ["tiny/ew_mult_conv"],
                                 "input_shapes": layers[mask]["output_shapes"],
                                 "output_shapes": [[-1, 1, seq, seq]], "original_names": ["/slice_conv"],
                                 "params": {"width_slice": [0, seq, 1]}}
    layers["tiny/ew_mult_conv"] = {"type": "ew_mult", "input": ["tiny/slice_conv"], "output": [],
                                   "input_shapes": [[-1, 1, seq, seq]], "output_shapes": [[-1, 1, seq, seq]],
                                   "original_names": ["/ew_mult_conv"], "params": {}}
    layers[mask]["output"].append("tiny/slice_conv")
    har = hf.write_har(tmp_path / "lfm2ish.har", "tiny", hn, w)
    man = tmp_path / "manifest.json"
    m = hf.manifest()
    man.write_text(json.dumps(m))
    out = tmp_path / "fixed.har"
    rep = by_name(fix_json(har, "-o", out, "--manifest", man))["mask-wiring"]
    assert len(rep["changes"]) == 2
    assert "left alone (they feed no ew_add): tiny/slice_conv" in rep["note"]
    _, fixed, _ = hf.read_har(out)
    assert fixed["layers"]["tiny/slice_conv"]["input"] == [mask]
    assert "tiny/slice_conv" in fixed["layers"][mask]["output"]
    # and without the manifest the attention slices are still found
    rep2 = by_name(fix_json(har, "-o", tmp_path / "fixed2.har"))["mask-wiring"]
    assert len(rep2["changes"]) == 2


def check_split(hn0, w0, hn, w, shards):
    vocab = sum(shards)
    conv0 = hn0["net_params"]["output_layers_order"][0]
    order = hn["net_params"]["output_layers_order"]
    assert order[0] == conv0 and len(order) == len(shards)
    kernels = [w[c + "/kernel:0"] for c in order]
    assert [k.shape for k in kernels] == [(1, 1, hf.HIDDEN, s) for s in shards]
    np.testing.assert_array_equal(np.concatenate(kernels, axis=-1), w0[conv0 + "/kernel:0"])
    np.testing.assert_array_equal(np.concatenate([w[c + "/bias:0"] for c in order]), w0[conv0 + "/bias:0"])
    layers = hn["layers"]
    norms = set()
    for c, width in zip(order, shards):
        assert layers[c]["params"]["kernel_shape"] == [1, 1, hf.HIDDEN, width]
        assert layers[c]["output_shapes"] == [[-1, 1, 1, width]]
        (out,) = layers[c]["output"]
        assert layers[out]["type"] == "output_layer"
        assert layers[out]["input_shapes"] == [[-1, 1, 1, width]]
        # each shard has its own slice -> normalization chain, fed by the layer norm
        sl = layers[c]["input"][0]
        assert layers[sl]["type"] == "slice" and layers[sl]["output"] == [c]
        norm = layers[sl]["input"][0]
        assert layers[norm]["type"] == "normalization" and layers[norm]["output"] == [sl]
        assert layers[norm]["input"] == ["tiny/layer_normalization1"]
        np.testing.assert_array_equal(w[norm + "/gamma:0"], w0["tiny/normalization1/gamma:0"])
        norms.add(norm)
    assert len(norms) == len(shards)
    assert sorted(layers["tiny/layer_normalization1"]["output"]) == sorted(norms)
    assert sum(layers[c]["output_shapes"][0][-1] for c in order) == vocab


def test_big_vocab_lm_head_split_without_manifest(tmp_path):
    hn0, w0 = hf.parsed_har(vocab=151936, layers=1)
    har = hf.write_har(tmp_path / "big.har", "tiny", hn0, w0)
    out = tmp_path / "big.fixed.har"
    rep = fix_json(har, "-o", out)
    assert "4 x 37984" in by_name(rep)["lm-head-split"]["changes"][0]
    _, hn, w = hf.read_har(out)
    check_split(hn0, w0, hn, w, [37984] * 4)


def test_lm_head_split_follows_manifest(parsed, tmp_path):
    har, _, hn0, w0 = parsed
    m = hf.manifest(shards=[12, 12, 12, 12])
    man = tmp_path / "m4.json"
    man.write_text(json.dumps(m))
    out = tmp_path / "split.har"
    fix_json(har, "-o", out, "--manifest", man)
    _, hn, w = hf.read_har(out)
    check_split(hn0, w0, hn, w, [12] * 4)


def head_logits(hn, w, h):
    """The logits the HN's output chains compute for a hidden state h [HIDDEN]:
    each output's lm_head conv, then its per-channel tail, joined in
    output_layers_order (what the host joins)."""
    layers, parts = hn["layers"], []
    for end in hn["net_params"]["output_layers_order"]:
        chain, x = [], end
        while layers[x]["type"] != "conv":
            chain.insert(0, x)
            x = layers[x]["input"][0]
        y = h @ w[x + "/kernel:0"][0, 0] + w[x + "/bias:0"]
        for t in chain:
            kind = layers[t]["type"]
            if kind == "normalization":
                y = y * w[t + "/gamma:0"] + w[t + "/beta:0"]
            elif kind == "activation":
                y = np.tanh(y)
            elif kind == "ew_div":
                y = y / w[t + "/scalar:0"]
            else:
                y = y * w[t + "/scalar:0"]
        parts.append(y)
    return np.concatenate(parts)


@pytest.mark.parametrize("softcap", [hf.SOFTCAP_NORMS, hf.SOFTCAP_EW], ids=["normalization", "ew"])
def test_lm_head_split_soft_caps_every_shard(tmp_path, softcap):
    """Gemma 2's final soft-cap tanh(x / 30) * 30 sits between the lm_head conv
    and the output layer: each shard gets its own copy, so every shard is
    capped (issue 37), with the per-channel arrays sliced with the conv."""
    hn0, w0 = hf.parsed_har(softcap=softcap)
    har = hf.write_har(tmp_path / "capped.har", "tiny", hn0, w0)
    man = tmp_path / "m4.json"
    man.write_text(json.dumps(hf.manifest(shards=[12, 12, 12, 12])))
    out = tmp_path / "split.har"
    rep = by_name(fix_json(har, "-o", out, "--manifest", man))["lm-head-split"]
    assert len(rep["changes"]) == 4, rep
    assert "copied per shard" in rep["changes"][0]
    _, hn, w = hf.read_har(out)
    layers = hn["layers"]
    order = hn["net_params"]["output_layers_order"]
    assert order[0] == hn0["net_params"]["output_layers_order"][0] and len(order) == 4
    seen = set()
    for end in order:
        chain, x = [], end
        while layers[x]["type"] != "conv":
            chain.insert(0, x)
            x = layers[x]["input"][0]
        assert [layers[t]["type"] for t in chain] == list(softcap)
        for t in [x, *chain]:
            assert layers[t]["output_shapes"] == [[-1, 1, 1, 12]]
            assert len(layers[t]["output"]) == 1
        (o,) = layers[end]["output"]
        assert layers[o]["type"] == "output_layer" and layers[o]["input_shapes"] == [[-1, 1, 1, 12]]
        seen.update(chain)
    assert len(seen) == 4 * len(softcap)
    # Large hidden states: every shard's logits would pass 30 uncapped.
    h = np.random.default_rng(1).standard_normal(hf.HIDDEN).astype(np.float32) * 100
    want = head_logits(hn0, w0, h)
    got = head_logits(hn, w, h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)
    for shard in got.reshape(4, 12):
        assert np.abs(shard).max() <= hf.SOFTCAP
    conv0 = hn0["net_params"]["output_layers_order"][0]
    while hn0["layers"][conv0]["type"] != "conv":
        conv0 = hn0["layers"][conv0]["input"][0]
    uncapped = (h @ w0[conv0 + "/kernel:0"][0, 0] + w0[conv0 + "/bias:0"]).reshape(4, 12)
    assert all(np.abs(shard).max() > hf.SOFTCAP for shard in uncapped)
    # A second run leaves it as it is.
    again = by_name(fix_json(out, "-o", tmp_path / "again.har", "--manifest", man))["lm-head-split"]
    assert again["changes"] == [] and "4 output(s) of 12, 12, 12, 12 as wanted" in again["note"]


def test_lm_head_split_refuses_a_tail_it_cannot_copy_per_shard(tmp_path):
    # A softmax over the vocabulary is not per-channel: split, it would
    # normalize each shard alone. Refused, naming it; nothing written.
    hn, w = hf.parsed_har(softcap=hf.SOFTCAP_NORMS)
    layers = hn["layers"]
    act = "tiny/activation_softcap1"
    layers[act]["type"] = "softmax"
    har = hf.write_har(tmp_path / "softmax.har", "tiny", hn, w)
    man = tmp_path / "m4.json"
    man.write_text(json.dumps(hf.manifest(shards=[12, 12, 12, 12])))
    r = run("har", "fix", har, "-o", tmp_path / "o.har", "--manifest", man)
    assert r.returncode == 4, r.stderr
    assert "through '%s' (softmax" % act in r.stderr and "per-channel" in r.stderr
    assert not (tmp_path / "o.har").exists()


def test_unequal_manifest_shards_refused(parsed, tmp_path):
    har, _, _, _ = parsed
    m = hf.manifest(shards=[20, 28])
    man = tmp_path / "bad.json"
    man.write_text(json.dumps(m))
    r = run("har", "fix", har, "-o", tmp_path / "o.har", "--manifest", man)
    assert r.returncode == 4 and "equal" in r.stderr
    assert not (tmp_path / "o.har").exists()


def test_second_run_changes_nothing(parsed, tmp_path):
    har, man, _, _ = parsed
    m = json.loads(man.read_text())
    m["lm_head_shards"] = [16, 16, 16]
    man.write_text(json.dumps(m))
    first, second = tmp_path / "1.har", tmp_path / "2.har"
    assert fix_json(har, "-o", first, "--manifest", man)["changes"] == 4 + 2 + 3
    rep = fix_json(first, "-o", second, "--manifest", man)
    assert rep["changes"] == 0 and rep["rewritten_members"] == []
    assert digest(first) == digest(second)  # members copied as they were


def test_input_never_modified_and_dry_run_writes_nothing(parsed, tmp_path):
    har, man, _, _ = parsed
    before = digest(har)
    rep = fix_json(har, "--dry-run", "--manifest", man)
    assert rep["written"] is False and rep["changes"] == 6
    assert sorted(rep["rewritten_members"]) == ["tiny.hn", "tiny.npz"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json", "tiny.har"]
    fix_json(har, "-o", tmp_path / "o.har", "--manifest", man)
    assert digest(har) == before


def test_output_rules(parsed, tmp_path):
    har, man, _, _ = parsed
    r = run("har", "fix", har, "-o", har, "--force")
    assert r.returncode == 2 and "input" in r.stderr
    out = tmp_path / "o.har"
    out.write_text("mine")
    r = run("har", "fix", har, "-o", out)
    assert r.returncode == 2 and "--force" in r.stderr and out.read_text() == "mine"
    assert run("har", "fix", har, "-o", out, "--force").returncode == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries left
    assert run("har", "fix", har).returncode == 2  # no -o


def test_without_manifest_structure_finds_the_same(parsed, tmp_path):
    har, man, _, _ = parsed
    a, b = tmp_path / "a.har", tmp_path / "b.har"
    fix_json(har, "-o", a, "--manifest", man)
    fix_json(har, "-o", b)
    assert hf.read_har(a)[1] == hf.read_har(b)[1]


# ---------------------------------------------------------------- pe input roles
# har fix takes which input is q or k, cos or sin from the manifest; it must
# read each role again from the HN and refuse, naming both readings, when a
# parse numbered the inputs otherwise.

def pe_roles_report(har, man, expect_rc=0):
    r = run("har", "fix", har, "--dry-run", "--manifest", man, "--json")
    assert r.returncode == expect_rc, r.stderr + r.stdout
    return by_name(json.loads(r.stdout))["pe-input-roles"] if expect_rc == 0 else r.stderr


def roles_har(tmp_path, manifest_kw=None, **har_kw):
    hn, w = hf.parsed_har(**har_kw)
    har = hf.write_har(tmp_path / "roles.har", "tiny", hn, w)
    man = tmp_path / "roles.json"
    man.write_text(json.dumps(hf.manifest(**(manifest_kw or {}))))
    return har, man


CONFIRMED = ("confirmed by structure: input_layer3 pe_k_cos, input_layer4 pe_q_cos, input_layer5 pe_k_sin, "
             "input_layer6 pe_q_sin")


def test_pe_roles_confirmed_by_structure(parsed, tmp_path):
    har, man, _, _ = parsed
    f = pe_roles_report(har, man)
    assert f["ran"] and f["changes"] == [] and f["warnings"] == []
    assert f["note"] == CONFIRMED
    # the same once widened (the second run of compile.py's fix step)
    fixed = tmp_path / "fixed.har"
    fix_json(har, "-o", fixed, "--manifest", man)
    f = pe_roles_report(fixed, man)
    assert f["note"] == CONFIRMED and f["warnings"] == []
    # MHA: q and k tables are equal, so only cos/sin is read; the operand order of the multiplies does not matter
    har, man = roles_har(tmp_path, {"kv_heads": hf.NHEAD}, kv_heads=hf.NHEAD, table_first=True)
    f = pe_roles_report(har, man)
    assert f["note"].startswith(CONFIRMED) and "q/k need no check" in f["note"] and f["warnings"] == []


def test_gqa_q_and_k_swapped_by_the_parse_is_refused(tmp_path):
    # The parse numbered q before k; the manifest has the export's order (k first).
    har, man = roles_har(tmp_path, pe_order=("pe_q_cos", "pe_k_cos", "pe_q_sin", "pe_k_sin"))
    err = pe_roles_report(har, man, expect_rc=3)
    assert "'tiny/input_layer3' is pe_k_cos in the manifest but pe_q_cos by the HN's structure" in err
    assert "'tiny/input_layer4' is pe_q_cos in the manifest but pe_k_cos by the HN's structure" in err
    assert "'tiny/input_layer5' is pe_k_sin in the manifest but pe_q_sin" in err
    assert "'tiny/input_layer6' is pe_q_sin in the manifest but pe_k_sin" in err
    assert "widens it to 16" in err and "numbered the inputs otherwise" in err
    out = tmp_path / "o.har"
    r = run("har", "fix", har, "-o", out, "--manifest", man)
    assert r.returncode == 3 and not out.exists()


def test_mha_cos_and_sin_swapped_by_the_parse_is_refused(tmp_path):
    har, man = roles_har(tmp_path, {"kv_heads": hf.NHEAD}, kv_heads=hf.NHEAD,
                         pe_order=("pe_k_sin", "pe_q_sin", "pe_k_cos", "pe_q_cos"))
    err = pe_roles_report(har, man, expect_rc=3)
    for layer, manifest_role, hn_role in [(3, "pe_k_cos", "pe_k_sin"), (4, "pe_q_cos", "pe_q_sin"),
                                          (5, "pe_k_sin", "pe_k_cos"), (6, "pe_q_sin", "pe_q_cos")]:
        assert ("'tiny/input_layer%d' is %s in the manifest but %s by the HN's structure"
                % (layer, manifest_role, hn_role)) in err
    assert "rotate-half conv" in err


def test_mha_q_and_k_swapped_needs_no_check(tmp_path):
    """In an MHA model the runtime writes the same values to the q and the k
    tables (both tiled heads times), so a q/k swap changes nothing: passed."""
    har, man = roles_har(tmp_path, {"kv_heads": hf.NHEAD}, kv_heads=hf.NHEAD,
                         pe_order=("pe_q_cos", "pe_k_cos", "pe_q_sin", "pe_k_sin"))
    f = pe_roles_report(har, man)
    assert "q/k need no check" in f["note"] and f["warnings"] == []


def test_pe_roles_the_structure_cannot_decide_trust_the_manifest_with_a_warning(tmp_path):
    """GPT-2's learned positions go through the pe tables without a rotation:
    cos and sin cannot be told apart, so the manifest is trusted, the fix goes
    on, and the report says which roles were not confirmed."""
    har, man = roles_har(tmp_path, positions="learned", pe_order=("pe_k_sin", "pe_q_cos", "pe_k_cos", "pe_q_sin"))
    out = tmp_path / "o.har"
    rep = fix_json(har, "-o", out, "--manifest", man)
    f = by_name(rep)["pe-input-roles"]
    assert len(f["warnings"]) == 1
    w = f["warnings"][0]
    assert "the manifest is trusted" in w and "'tiny/input_layer3' as cos: its table feeds no multiply" in w
    assert len(by_name(rep)["rope-input-widening"]["changes"]) == 4 and out.exists()
    text = run("har", "fix", har, "--dry-run", "--manifest", man)
    assert text.returncode == 0 and "    warning: pe input roles not confirmed" in text.stdout


def test_without_manifest_no_roles_to_check(parsed):
    har, _, _, _ = parsed
    r = run("har", "fix", har, "--dry-run", "--json")
    assert r.returncode == 0
    assert by_name(json.loads(r.stdout))["pe-input-roles"]["note"].startswith("no manifest")


EXPORTS = {"llama3-tiny": (), "gemma3-tiny": (), "phi4mini-tiny": (), "neox-parallel": (),
           "gpt2-tiny": ("--gelu", "tanh"), "lfm2-tiny": ()}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exports")
    done = {}
    for name, extra in EXPORTS.items():
        out = folder / name
        r = subprocess.run([str(BIN), "export", str(FIXTURES / name), "-o", str(out),
                            "--cache", "32", "--prefill", "8", "--no-progress", *extra], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        done[name] = out
    return done


def har_of_export(out, tmp_path, input_order=None):
    hn, w = hf.hn_from_onnx(out / "model.onnx", input_order=input_order)
    return hf.write_har(tmp_path / "export.har", "tiny", hn, w), out / "manifest.json"


@pytest.mark.parametrize("name", ["llama3-tiny", "gemma3-tiny", "phi4mini-tiny", "neox-parallel"])
def test_pe_roles_of_real_exports(exports, name, tmp_path):
    """The graphs the adapters write (GQA, two RoPE bases picked per layer,
    partial rotary, MHA), as a parse by section 2's conventions numbers them:
    every role confirmed."""
    f = pe_roles_report(*har_of_export(exports[name], tmp_path))
    assert f["note"].startswith("confirmed by structure: input_layer3 pe_q_cos, input_layer4 pe_q_sin, "
                                "input_layer5 pe_k_cos, input_layer6 pe_k_sin"), f
    assert f["warnings"] == []


def test_real_exports_numbered_otherwise_are_refused(exports, tmp_path):
    # GQA, the parse numbering k before q (ONNX inputs: embeds, mask, q_cos, q_sin, k_cos, k_sin)
    err = pe_roles_report(*har_of_export(exports["llama3-tiny"], tmp_path, [0, 1, 4, 5, 2, 3]), expect_rc=3)
    assert "'tiny/input_layer3' is pe_q_cos in the manifest but pe_k_cos by the HN's structure" in err
    # MHA, sin before cos
    err = pe_roles_report(*har_of_export(exports["neox-parallel"], tmp_path, [0, 1, 3, 2, 5, 4]), expect_rc=3)
    assert "'tiny/input_layer3' is pe_q_cos in the manifest but pe_q_sin by the HN's structure" in err
    assert "'tiny/input_layer6' is pe_k_sin in the manifest but pe_k_cos by the HN's structure" in err


def test_learned_positions_export_trusts_the_manifest_with_a_warning(exports, tmp_path):
    f = pe_roles_report(*har_of_export(exports["gpt2-tiny"], tmp_path))
    assert len(f["warnings"]) == 1 and "the manifest is trusted" in f["warnings"][0]


def gemma3_one_kv_head(tmp_path):
    """gemma3-tiny with one KV head, as every released Gemma 3 size has
    (k_proj and v_proj keep their first head's rows): the k tables need no
    tiling (theta x 1), so the export's tiling MatMul is an identity."""
    model = tmp_path / "gemma3-1kv"
    shutil.copytree(FIXTURES / "gemma3-tiny", model)
    config = json.loads((model / "config.json").read_text())
    config["num_key_value_heads"] = 1
    (model / "config.json").write_text(json.dumps(config))
    blob = (model / "model.safetensors").read_bytes()
    n = struct.unpack("<Q", blob[:8])[0]
    header, data = json.loads(blob[8:8 + n]), blob[8 + n:]
    new, parts, offset = {}, [], 0
    for name, info in header.items():
        if name == "__metadata__":
            new[name] = info
            continue
        begin, end = info["data_offsets"]
        chunk = data[begin:end]
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            rows, cols = info["shape"]
            chunk = chunk[:config["head_dim"] * cols * (len(chunk) // (rows * cols))]
            info = dict(info, shape=[config["head_dim"], cols])
        new[name] = dict(info, data_offsets=[offset, offset + len(chunk)])
        parts.append(chunk)
        offset += len(chunk)
    text = json.dumps(new).encode()
    (model / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text + b"".join(parts))
    out = tmp_path / "gemma3-1kv-out"
    r = run("export", model, "-o", out, "--cache", 32, "--prefill", 8, "--no-progress")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("kv", ["two-kv-heads", "one-kv-head"])
def test_gemma3_picking_matmuls_read_the_widened_tables(exports, tmp_path, kv):
    """Gemma 3's two RoPE bases (sdk/rope_bases.cpp): each pe table is tiled
    per head by a conv, then each layer picks its base's columns with a
    constant matmul, a second single-input conv. Widening removes the tiling
    conv and hands the widened input straight to the picking convs; with one
    KV head the k tables are already as wide as the runtime writes them
    (theta x 1) and keep their identity conv."""
    out = exports["gemma3-tiny"] if kv == "two-kv-heads" else gemma3_one_kv_head(tmp_path)
    har, man = har_of_export(out, tmp_path)
    _, hn0, _ = hf.read_har(har)
    m = json.loads(man.read_text())
    fixed = tmp_path / "fixed.har"
    rep = by_name(fix_json(har, "-o", fixed, "--manifest", man))
    assert rep["pe-input-roles"]["warnings"] == [] and rep["pe-input-roles"]["note"].startswith("confirmed")
    _, hn, _ = hf.read_har(fixed)
    before, after = hn0["layers"], hn["layers"]
    tiles = {"pe_q": m["pe_tiles"]["q"], "pe_k": m["pe_tiles"]["k"]}
    picked = 0
    for name, layer in before.items():
        if layer["type"] != "input_layer" or not layer["original_names"][0].startswith("pe_"):
            continue
        width = m["theta_length"] * tiles[layer["original_names"][0][:4]]
        (first,) = layer["output"]
        assert after[name]["output_shapes"][0][-1] == width
        if layer["output_shapes"][0][-1] == width:  # no tiling: the identity conv stays
            assert tiles[layer["original_names"][0][:4]] == 1 and after[name]["output"] == [first]
            picks = before[first]["output"]
        else:  # the tiling conv is gone; the input feeds the picking convs
            assert first not in after
            picks = before[first]["output"]
            assert after[name]["output"] == picks
            for p in picks:
                assert after[p]["input"] == [name]
                assert after[p]["input_shapes"][0][-1] == width
        # the picks: one single-input conv per RoPE base, each narrowing to its base's half
        assert len(picks) == 2 and all(after[p]["type"] == "conv" for p in picks)
        assert all(after[p]["output_shapes"][0][-1] * 2 == width for p in picks)
        picked += len(picks)
    assert picked == 8
    if kv == "one-kv-head":
        assert tiles["pe_k"] == 1
        assert "pe inputs already as wide as the runtime writes them" in rep["rope-input-widening"]["note"]


def test_lfm2_conv_shift_mask_slice_is_left_alone(exports, tmp_path):
    """LFM2 (docs/lfm2.md): the attention layers' mask slices feed the scores'
    ew_add and are rewired; the conv layers' shift matrices start from one
    head's block of the mask, a slice that feeds no add (a reshape here), and
    stays as it is, still fed by the mask."""
    har, man = har_of_export(exports["lfm2-tiny"], tmp_path)
    _, hn0, _ = hf.read_har(har)
    config = json.loads((FIXTURES / "lfm2-tiny" / "config.json").read_text())
    attention_layers = sum(t == "full_attention" for t in config["layer_types"])
    fixed = tmp_path / "fixed.har"
    rep = by_name(fix_json(har, "-o", fixed, "--manifest", man))["mask-wiring"]
    assert len(rep["changes"]) == attention_layers
    mask = "tiny/input_layer2"
    shift = [c for c in hn0["layers"][mask]["output"] if hn0["layers"][c]["type"] == "slice"
             and not any(hn0["layers"][o]["type"] == "ew_add" for o in hn0["layers"][c]["output"])]
    assert len(shift) == 1
    assert rep["note"].endswith("left alone (they feed no ew_add): " + shift[0])
    _, hn, _ = hf.read_har(fixed)
    assert hn["layers"][shift[0]] == hn0["layers"][shift[0]]
    assert shift[0] in hn["layers"][mask]["output"]


def test_adapter_hook_runs(parsed, tmp_path):
    har, _, _, _ = parsed
    man = tmp_path / "with-adapter.json"
    man.write_text(json.dumps(hf.manifest(adapter="gpt2")))
    rep = fix_json(har, "-o", tmp_path / "o.har", "--manifest", man)
    hook = by_name(rep)["adapter:gpt2"]
    assert hook["ran"] and hook["changes"] == []
    man.write_text(json.dumps(hf.manifest(adapter="no-such-adapter")))
    r = run("har", "fix", har, "-o", tmp_path / "p.har", "--manifest", man)
    assert r.returncode == 4 and "no-such-adapter" in r.stderr


# ---------------------------------------------------------------- fix, after optimize

def test_conv_input_order_repaired(tmp_path):
    hn0 = hf.quantized_hn(permuted=True)
    har = hf.write_har(tmp_path / "q.har", "tiny", hn0, None, state="quantized_model")
    out = tmp_path / "qf.har"
    rep = fix_json(har, "-o", out)
    f = by_name(rep)
    assert not f["rope-input-widening"]["ran"] and not f["lm-head-split"]["ran"]
    assert len(f["conv-input-order"]["changes"]) == 2  # one per scope
    _, hn, _ = hf.read_har(out)
    expected = copy.deepcopy(hn0)
    for g in ["tiny__prefill", "tiny__tbt"]:
        conv = expected["layers"][g + "/conv21"]
        conv["input"] = [g + "/conv20", g + "/input_layer1"]
        widths = [expected["layers"][p]["output_shapes"][0][-1] for p in conv["input"]]
        assert widths == [s[-1] for s in conv["input_shapes"]] == [4864, 896]
    assert hn == expected  # only `input` changed
    assert fix_json(out, "-o", tmp_path / "again.har")["changes"] == 0


def test_conv_input_order_leaves_correct_hn_alone(tmp_path):
    har = hf.write_har(tmp_path / "q.har", "tiny", hf.quantized_hn(permuted=False), None, state="quantized_model")
    assert fix_json(har, "-o", tmp_path / "o.har")["changes"] == 0


@pytest.mark.parametrize("state,code", [("compiled_model", 4), ("mystery_state", 4)])
def test_states_refused(tmp_path, state, code):
    hn, w = hf.parsed_har()
    har = hf.write_har(tmp_path / "s.har", "tiny", hn, w, state=state)
    r = run("har", "fix", har, "-o", tmp_path / "o.har")
    assert r.returncode == code and state in r.stderr
    assert not (tmp_path / "o.har").exists()
    rep = json.loads(run("har", "inspect", har, "--json").stdout)  # inspect still reads it
    assert rep["state"] == state and rep["stage"] == ("compiled" if state.startswith("compiled") else "unknown")


# ---------------------------------------------------------------- lines

def test_compile_lines(tmp_path):
    hn = hf.quantized_hn(permuted=False)
    har = hf.write_har(tmp_path / "q.har", "tiny", hn, None, state="quantized_model")
    r = run("har", "lines", har, "--for", "compile")
    assert r.returncode == 0, r.stderr
    expected = ["tiny__prefill = network_group([tiny__prefill])", "tiny__tbt = network_group([tiny__tbt])"]
    for name in sorted(n for n, layer in hn["layers"].items() if layer.get("io_type") == "cache"):
        group, short = name.split("/", 1)
        layer = hn["layers"][name]
        if layer["type"] == "input_layer":
            expected.append("%s/tf_rgb_to_hailo_rgb_from_%s = format_conversion(%s, %s, tf_rgb_to_hailo_rgb)"
                            % (group, short, name, layer["output"][0]))
        else:
            expected.append("%s/hailo_rgb_to_tf_rgb_to_%s = format_conversion(%s, %s, hailo_rgb_to_tf_rgb)"
                            % (group, short, layer["input"][0], name))
    assert r.stdout.splitlines() == expected
    assert len(expected) == 2 + 4


def test_compile_lines_need_two_groups(parsed):
    har, _, _, _ = parsed
    r = run("har", "lines", har, "--for", "compile")
    assert r.returncode == 3 and "__prefill" in r.stderr


def test_three_scopes_go_through_fix_and_compile_lines(tmp_path):
    # What a real quantized HAR holds (hailo-contract.md section 3): the base
    # scope next to both groups, with the same layer names in all three.
    hn0 = hf.quantized_hn(permuted=True)
    shorts = {n.split("/", 1)[1] for n in hn0["layers"] if n.startswith("tiny/")}
    assert {"conv20", "conv21", "conv22", "input_layer1"} <= shorts
    assert all("tiny__prefill/" + s in hn0["layers"] and "tiny__tbt/" + s in hn0["layers"]
               for s in shorts)
    har = hf.write_har(tmp_path / "q.har", "tiny", hn0, None, state="quantized_model")
    out = tmp_path / "qf.har"
    rep = fix_json(har, "-o", out)
    assert len(by_name(rep)["conv-input-order"]["changes"]) == 2  # the groups; the base was never permuted
    assert "base scope tiny kept" in rep["scopes"]
    _, hn, _ = hf.read_har(out)
    assert hn["layers"]["tiny/conv21"] == hn0["layers"]["tiny/conv21"]
    r = run("har", "lines", out, "--for", "compile")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[:2] == ["tiny__prefill = network_group([tiny__prefill])", "tiny__tbt = network_group([tiny__tbt])"]
    assert len(lines) == 2 + 4
    named = [tok for line in lines for tok in line.replace("(", " ").replace(")", " ").replace(",", " ")
             .replace("[", " ").replace("]", " ").split() if "/" in tok]
    assert named and all(t.split("/")[0] in ("tiny__prefill", "tiny__tbt") for t in named)
    assert "base scope 'tiny' ignored" in r.stderr


def test_base_scope_cache_layers_are_ignored(tmp_path):
    hn = hf.quantized_hn(permuted=False, base_cache=True)
    har = hf.write_har(tmp_path / "q.har", "tiny", hn, None, state="quantized_model")
    r = run("har", "lines", har, "--for", "compile")
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.splitlines()) == 2 + 4 and "tiny/" not in r.stdout
    assert "2 cache layer(s) get no format_conversion" in r.stderr
    rep = json.loads(run("har", "inspect", har, "--json").stdout)
    flags = {c["name"]: c["in_network_group"] for c in rep["cache_layers"]}
    assert flags["tiny/cache_input_layer1"] is False and flags["tiny__tbt/cache_input_layer1"] is True


@pytest.mark.parametrize("groups,needle", [
    (["tiny__prefill"], "1 '__prefill' and 0 '__tbt'"),
    (["tiny__prefill", "tiny__tbt", "other__prefill"], "2 '__prefill' and 1 '__tbt'"),
    (["tiny__prefill", "other__tbt"], "do not share one base name"),
    (["tiny__prefill", "tiny__tbt", "extra"], "scope 'extra' is neither"),
])
def test_scopes_must_be_one_of_each_suffix(tmp_path, groups, needle):
    har = hf.write_har(tmp_path / "q.har", "tiny", hf.quantized_hn(groups=groups), None, state="quantized_model")
    for args in (["fix", har, "-o", tmp_path / "o.har"], ["lines", har, "--for", "compile"]):
        r = run("har", *args)
        assert r.returncode == 3 and needle in r.stderr, (args, r.stderr)
    assert not (tmp_path / "o.har").exists()
    rep = json.loads(run("har", "inspect", har, "--json").stdout)  # inspect still reads it, and says why
    assert rep["network_groups"] is None and needle in rep["scope_problem"]


def test_optimize_lines(parsed, tmp_path):
    har, man, _, _ = parsed
    fixed = tmp_path / "fixed.har"
    fix_json(har, "-o", fixed, "--manifest", man)
    _, hn, w = hf.read_har(fixed)
    expected = []
    for name, layer in hn["layers"].items():
        if layer["type"] != "conv":
            continue
        if np.mean(w[name + "/kernel:0"] == 0) > 0.9:
            continue
        if min(s[-1] for s in layer["input_shapes"]) <= hf.HD:
            continue
        expected.append(name)
    rot = [n for n in hn["layers"] if n.startswith("tiny/conv") and np.mean(w[n + "/kernel:0"] == 0) > 0.9]
    assert rot and not set(rot) & set(expected)  # rotate-half convs are left out
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["quantization_param([%s], precision_mode=a8_w4)" % ", ".join(expected)]
    # before the fix the tiling convs are narrow (input HD wide) and left out too
    r = run("har", "lines", har, "--for", "optimize", "--pe-width", hf.HD)
    assert r.returncode == 0 and "tiny/conv1," not in r.stdout and "tiny/conv1]" not in r.stdout
    assert run("har", "lines", har, "--for", "optimize").returncode == 2  # no pe width


# ---------------------------------------------------------------- lines --plan (issue 26)

def plan_file(path, lines, default_mode="a8_w4", **extra):
    """quantization.json as `llm2hef calibrate` writes it: the plan names ONNX
    nodes of model.onnx; other keys (statistics) are ignored by `har lines`."""
    doc = {"version": 1, "plan": {"lines": lines, "default_mode": default_mode},
           "tensors": [{"name": "/model/layers.0/attn_residual/Add_output_0", "max_abs": 2.0e4}]}
    doc.update(extra)
    path.write_text(json.dumps(doc))
    return path


def entry(node, mode, reason="range beyond what 8 bits resolve"):
    return {"onnx_node": node, "precision_mode": mode, "reason": reason}


@pytest.fixture
def fixed_for_plan(parsed, tmp_path):
    har, man, _, _ = parsed
    fixed = tmp_path / "fixed.har"
    fix_json(har, "-o", fixed, "--manifest", man)
    _, hn, _ = hf.read_har(fixed)
    default = run("har", "lines", fixed, "--for", "optimize", "--manifest", man)
    assert default.returncode == 0, default.stderr
    [line] = default.stdout.splitlines()
    a8w4 = line[len("quantization_param(["):line.index("]")].split(", ")
    return fixed, man, hn, a8w4


def layers_of(hn, node):
    return [n for n, layer in hn["layers"].items() if node in layer["original_names"]]


def test_plan_maps_onnx_nodes_to_hn_layers_by_original_names(fixed_for_plan, tmp_path):
    fixed, man, hn, a8w4 = fixed_for_plan
    o_proj, residual = "/model/layers.1/attn/o_proj/MatMul", "/model/layers.0/attn_residual/Add"
    [o_layer], [res_layer] = layers_of(hn, o_proj), layers_of(hn, residual)
    assert o_layer in a8w4 and hn["layers"][res_layer]["type"] == "ew_add"
    q1 = "/model/layers.1/attn/q_proj/MatMul"
    [q1_layer] = layers_of(hn, q1)
    plan = plan_file(tmp_path / "quantization.json", [entry(o_proj, "a16_w8"), entry(residual, "a16_w16"),
                                                      entry(q1, "a16_w8")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 0, r.stderr
    rest = [c for c in a8w4 if c not in (o_layer, q1_layer)]
    assert r.stdout.splitlines() == [
        "quantization_param([%s], precision_mode=a8_w4)" % ", ".join(rest),
        "quantization_param([%s, %s], precision_mode=a16_w8)" % (o_layer, q1_layer),
        "quantization_param([%s], precision_mode=a16_w16)" % res_layer]
    assert "2 compressible conv(s) taken out of the a8_w4 line" in r.stderr, r.stderr
    js = json.loads(run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan,
                        "--json").stdout)
    assert js["lines"] == r.stdout.splitlines()


def test_plan_on_the_split_lm_head_reaches_every_shard(parsed, tmp_path):
    # lm_head split (hailo-contract.md section 5.3) copies the conv: every
    # shard keeps the lm_head MatMul in its original_names.
    hn, w = hf.parsed_har(vocab=96)
    har = hf.write_har(tmp_path / "wide.har", "tiny", hn, w)
    man = tmp_path / "m.json"
    man.write_text(json.dumps(hf.manifest(vocab=96, shards=[48, 48])))
    fixed = tmp_path / "wide.fixed.har"
    fix_json(har, "-o", fixed, "--manifest", man)
    _, fhn, _ = hf.read_har(fixed)
    shards = layers_of(fhn, "/model/lm_head/MatMul")
    assert len(shards) == 2
    plan = plan_file(tmp_path / "q.json", [entry("/model/lm_head/MatMul", "a8_w8")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "quantization_param([%s], precision_mode=a8_w8)" % ", ".join(shards)
    assert not any(s in lines[0] for s in shards)


def test_the_plan_default_mode_replaces_a8_w4(fixed_for_plan, tmp_path):
    fixed, man, _, a8w4 = fixed_for_plan
    plan = plan_file(tmp_path / "q.json", [], default_mode="a8_w8")
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["quantization_param([%s], precision_mode=a8_w8)" % ", ".join(a8w4)]


def test_a_plan_entry_that_maps_to_no_layer_is_refused(fixed_for_plan, tmp_path):
    fixed, man, hn, _ = fixed_for_plan
    typo = "/model/layers.1/attn/o_proj/MatMu"
    gone = "/model/layers.7/mlp/down_proj/MatMul"
    plan = plan_file(tmp_path / "q.json", [entry("/model/layers.0/attn/q_proj/MatMul", "a16_w8"),
                                           entry(typo, "a16_w8"), entry(gone, "a16_w16")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 3 and r.stdout == "", r.stdout + r.stderr
    err = r.stderr
    assert str(plan) in err and "2 plan entries map to no layer" in err, err
    assert "plan.lines[1] '%s' (a16_w8): no layer lists it in original_names" % typo in err, err
    assert "plan.lines[2] '%s'" % gone in err and "plan.lines[0]" not in err, err
    # the closest names, with the layers that carry them
    [o_layer] = layers_of(hn, "/model/layers.1/attn/o_proj/MatMul")
    assert "closest: '/model/layers.1/attn/o_proj/MatMul' (%s)" % o_layer in err, err


@pytest.mark.parametrize("case,needle", [
    ("mode", "field 'plan.lines[0].precision_mode': 'a4_w4' is not a precision mode"),
    ("default", "field 'plan.default_mode': 'int8' is not a precision mode"),
    ("node", "field 'plan.lines[0].onnx_node': expected the name of a node of model.onnx"),
    ("version", "field 'version': 2 is not a version this llm2hef reads (1)"),
    ("lines", "field 'plan.lines': expected a list"),
    ("conflict", "plan entries give one HN layer two precision modes"),
])
def test_a_bad_plan_is_refused_naming_the_field(fixed_for_plan, tmp_path, case, needle):
    fixed, man, _, _ = fixed_for_plan
    node = "/model/layers.0/attn/o_proj/MatMul"
    path = tmp_path / "q.json"
    if case == "mode":
        plan_file(path, [entry(node, "a4_w4")])
    elif case == "default":
        plan_file(path, [], default_mode="int8")
    elif case == "node":
        plan_file(path, [{"precision_mode": "a16_w8"}])
    elif case == "version":
        plan_file(path, [], version=2)
    elif case == "lines":
        path.write_text(json.dumps({"version": 1, "plan": {"lines": {"x": 1}}}))
    else:
        plan_file(path, [entry(node, "a16_w8"), entry(node, "a8_w8")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", path)
    assert r.returncode == 3 and needle in r.stderr and str(path) in r.stderr, r.stderr


def test_plan_is_for_optimize_lines_only(fixed_for_plan, tmp_path):
    fixed, _, _, _ = fixed_for_plan
    plan = plan_file(tmp_path / "q.json", [])
    r = run("har", "lines", fixed, "--for", "compile", "--plan", plan)
    assert r.returncode == 2 and "--plan applies to --for optimize" in r.stderr, r.stderr


# ---------------------------------------------------------------- weight_group_size (issue 36)

@pytest.fixture
def wide_fixed(tmp_path, monkeypatch):
    """A fixed HAR whose hidden size is 128: the q/k projections and the
    lm_head take a 128-wide input (one whole group of 128), the fixture's
    o_proj the NHEAD*SEQ = 32-wide softmax output (no whole group)."""
    monkeypatch.setattr(hf, "HIDDEN", 128)
    hn, w = hf.parsed_har()
    har = hf.write_har(tmp_path / "wide.har", "tiny", hn, w)
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps(hf.manifest()))
    fixed = tmp_path / "wide.fixed.har"
    fix_json(har, "-o", fixed, "--manifest", man)
    return fixed, man, hf.read_har(fixed)[1]


def grouped(node, mode, size=128):
    return dict(entry(node, mode), weight_group_size=size)


def test_weight_group_size_lines_follow_the_precision_lines(wide_fixed, tmp_path):
    # Hailo's Qwen2-1.5B-Instruct script: the precision lines, then
    # quantization_param([<its 4-bit block convs>], weight_group_size=128).
    fixed, man, hn = wide_fixed
    q0, q1 = "/model/layers.0/attn/q_proj/MatMul", "/model/layers.1/attn/q_proj/MatMul"
    head = "/model/lm_head/MatMul"
    [q0_layer], [q1_layer], [head_layer] = layers_of(hn, q0), layers_of(hn, q1), layers_of(hn, head)
    plan = plan_file(tmp_path / "q.json", [grouped(q0, "a8_w4"), entry(q1, "a8_w4"), grouped(head, "a16_w4_a16")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1:] == ["quantization_param([%s, %s], precision_mode=a8_w4)" % (q0_layer, q1_layer),
                         "quantization_param([%s], precision_mode=a16_w4_a16)" % head_layer,
                         "quantization_param([%s, %s], weight_group_size=128)" % (q0_layer, head_layer)]
    assert lines[0].endswith("precision_mode=a8_w4)") and q0_layer not in lines[0]
    assert "2 conv(s) with weight_group_size=128" in r.stderr, r.stderr
    # A plan without the field writes no such line (as before).
    plain = plan_file(tmp_path / "plain.json", [entry(q0, "a8_w4")])
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plain)
    assert r.returncode == 0 and "weight_group_size" not in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("case,needle", [
    ("64", "field 'plan.lines[0].weight_group_size' ('/model/layers.0/attn/q_proj/MatMul'): expected 128"),
    ("string", "expected 128, the one group size a public Hailo-10H script writes"),
    ("8-bit", "group-wise weight scales are for 4-bit weights (a8_w4, a16_w4_a16), as Hailo's script gives them; "
              "this entry's precision_mode is a8_w8"),
    ("16-bit", "this entry's precision_mode is a16_w16"),
    ("narrow", "plan.lines[0] '/model/layers.0/attn/o_proj/MatMul' (weight_group_size=128) maps to "),
    ("conflict", "plan entries give one HN layer two precision modes or group sizes"),
])
def test_a_bad_weight_group_size_is_refused_naming_the_entry(wide_fixed, tmp_path, case, needle):
    fixed, man, hn = wide_fixed
    q0, o0 = "/model/layers.0/attn/q_proj/MatMul", "/model/layers.0/attn/o_proj/MatMul"
    lines = {"64": [grouped(q0, "a8_w4", 64)], "string": [grouped(q0, "a8_w4", "128")],
             "8-bit": [grouped(q0, "a8_w8")], "16-bit": [grouped("/model/layers.0/attn_residual/Add", "a16_w16")],
             "narrow": [grouped(o0, "a8_w4")], "conflict": [grouped(q0, "a8_w4"), entry(q0, "a8_w4")]}[case]
    plan = plan_file(tmp_path / "q.json", lines)
    r = run("har", "lines", fixed, "--for", "optimize", "--manifest", man, "--plan", plan)
    assert r.returncode == 3 and r.stdout == "", r.stdout + r.stderr
    assert needle in r.stderr and str(plan) in r.stderr, r.stderr
    if case == "narrow":
        [o_layer] = layers_of(hn, o0)
        assert "maps to %s, a conv whose input is 32 wide, not a multiple of 128" % o_layer in r.stderr, r.stderr
        assert "what the DFC does with a partial group is not public" in r.stderr


@pytest.mark.parametrize("cmd", [["har"], ["har", "inspect"], ["har", "fix"], ["har", "lines"]])
def test_help(cmd):
    r = run(*cmd, "--help")
    assert r.returncode == 0 and "Usage: llm2hef har" in r.stdout


# ---------------------------------------------------------------- malformed and malicious

def tar_with(path, entries):
    """entries: (TarInfo, bytes or None)."""
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def member(name, data=b"", type_=tarfile.REGTYPE, **kw):
    info = tarfile.TarInfo(name)
    info.type = type_
    info.size = len(data) if type_ == tarfile.REGTYPE else 0
    for k, v in kw.items():
        setattr(info, k, v)
    return info, (data if type_ == tarfile.REGTYPE else None)


HN_BYTES = json.dumps(hf.parsed_har()[0]).encode()


@pytest.mark.parametrize("label,entries,needle", [
    ("absolute", [member("/etc/tiny.hn", HN_BYTES)], "absolute"),
    ("dotdot", [member("tiny.hn", HN_BYTES), member("../evil.npz", b"x")], "'..'"),
    ("dotdot-inner", [member("a/../../tiny.hn", HN_BYTES)], "'..'"),
    ("symlink", [member("tiny.hn", HN_BYTES), member("link.npz", type_=tarfile.SYMTYPE, linkname="/etc/passwd")],
     "link"),
    ("hardlink", [member("tiny.hn", HN_BYTES), member("hard.npz", type_=tarfile.LNKTYPE, linkname="tiny.hn")], "link"),
    ("chardev", [member("tiny.hn", HN_BYTES), member("dev", type_=tarfile.CHRTYPE, devmajor=1, devminor=3)],
     "not a regular file"),
    ("fifo", [member("tiny.hn", HN_BYTES), member("pipe", type_=tarfile.FIFOTYPE)], "not a regular file"),
    ("duplicate", [member("tiny.hn", HN_BYTES), member("./tiny.hn", HN_BYTES)], "twice"),
    ("no-hn", [member("tiny.npz", b"x")], "no main HN"),
    ("two-hn", [member("a.hn", HN_BYTES), member("b.hn", HN_BYTES)], "two main HN"),
    ("bad-json", [member("tiny.hn", b"{not json")], "not valid JSON"),
    ("no-layers", [member("tiny.hn", b'{"name": "x"}')], "'layers'"),
    ("dangling", [member("tiny.hn", json.dumps({"layers": {"a": {"type": "conv", "input": ["ghost"]}}}).encode())],
     "ghost"),
    ("one-sided", [member("tiny.hn", json.dumps({"layers": {"a": {"type": "input_layer", "output": []},
                                                            "b": {"type": "conv", "input": ["a"]}}}).encode())],
     "does not list"),
    ("bad-shape",
     [member("tiny.hn", json.dumps({"layers": {"a": {"type": "x", "input_shapes": [[1, "w"]]}}}).encode())],
     "non-integer"),
    ("bad-metadata", [member("tiny.hn", HN_BYTES), member("tiny.metadata.json", b"[1,2")], "not valid JSON"),
])
def test_malicious_or_malformed_tar(tmp_path, label, entries, needle):
    har = tar_with(tmp_path / (label + ".har"), entries)
    for cmd in (["inspect", har], ["fix", har, "-o", tmp_path / "out.har"]):
        r = run("har", *cmd)
        assert r.returncode == 3, (label, r.returncode, r.stderr)
        assert needle in r.stderr and str(har) in r.stderr, r.stderr
        assert "internal" not in r.stderr
    assert not (tmp_path / "out.har").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_not_a_tar_truncated_and_compressed(parsed, tmp_path):
    har, _, _, _ = parsed
    data = har.read_bytes()
    cases = {"garbage.har": os.urandom(4096), "empty.har": b"", "truncated.har": data[: len(data) // 2],
             "header-only.har": data[:700]}
    import gzip
    cases["gz.har"] = gzip.compress(data)
    for name, blob in cases.items():
        p = tmp_path / name
        p.write_bytes(blob)
        r = run("har", "fix", p, "-o", tmp_path / "out.har")
        assert r.returncode == 3, (name, r.returncode, r.stderr)
        assert str(p) in r.stderr
        assert not (tmp_path / "out.har").exists()
    r = run("har", "inspect", tmp_path / "missing.har")
    assert r.returncode == 3 and "no such file" in r.stderr


def test_corrupt_weights_fail_cleanly(tmp_path):
    hn, w = hf.parsed_har()
    npz = bytearray(hf.npz_bytes(w))
    npz[len(npz) // 3: len(npz) // 3 + 64] = b"\xff" * 64  # inside an array's data or header
    har = hf.write_har(tmp_path / "c.har", "tiny", hn, None, extra=[("tiny.npz", bytes(npz[: len(npz) // 2]))])
    r = run("har", "fix", har, "-o", tmp_path / "out.har")
    assert r.returncode == 3, r.stderr
    assert "tiny.npz" in r.stderr
    assert not (tmp_path / "out.har").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_missing_lm_head_kernel(tmp_path):
    hn, w = hf.parsed_har(vocab=151936, layers=1)
    head = hn["net_params"]["output_layers_order"][0]
    del w[head + "/kernel:0"]
    har = hf.write_har(tmp_path / "k.har", "tiny", hn, w)
    r = run("har", "fix", har, "-o", tmp_path / "out.har")
    assert r.returncode == 3 and head + "/kernel:0" in r.stderr
    assert not (tmp_path / "out.har").exists()
