"""Rough edges a new user met (issue 28, section 4): each test runs the built
llm2hef the way the user did and fails on the code before the fix."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"


def run(*args, timeout=300):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def copy_fixture(tmp_path, name="qwen2-tiny", edit=None):
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    if edit:
        cfg = json.loads((dst / "config.json").read_text())
        edit(cfg)
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def mask_limited_cache(heads):
    """The largest N with N * heads * N <= 2^31 (the attention mask)."""
    n = int((2 ** 31 / heads) ** 0.5)
    while (n + 1) * heads * (n + 1) <= 2 ** 31:
        n += 1
    while n * heads * n > 2 ** 31:
        n -= 1
    return n


# ---------------------------------------------------------------- 1. compile.py's calibration limit

def test_limit_is_compile_pys_for_14_heads():
    assert mask_limited_cache(14) == 12385


def test_inspect_warns_past_the_calibration_limit():
    heads = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["num_attention_heads"]
    largest = mask_limited_cache(heads)
    r = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32768, "--json")
    assert r.returncode == 0, r.stderr
    cal = json.loads(r.stdout)["calibration"]
    assert cal["largest_cache"] == largest
    assert cal["fits"] is False
    assert str(largest) in cal["warning"] and "RAM" in cal["warning"]
    assert cal["ram_bytes"] > 16 * 10 ** 9
    text = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32768).stdout
    assert "warning: compile.py cannot calibrate cache 32768" in text
    assert "largest cache it can calibrate is %d" % largest in text
    # Within the limit: no warning.
    ok = json.loads(run("inspect", FIXTURES / "qwen2-tiny", "--cache", 64, "--json").stdout)["calibration"]
    assert ok["fits"] is True and "warning" not in ok


def test_export_warns_past_the_calibration_limit_and_inputs_refuses_there(tmp_path):
    heads = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["num_attention_heads"]
    largest = mask_limited_cache(heads)
    out = tmp_path / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32768, "--no-sync")
    assert r.returncode == 0, r.stderr
    assert "warning: compile.py cannot calibrate cache 32768" in r.stderr
    assert "--cache %d" % largest in r.stderr
    # What compile.py runs to calibrate refuses it, naming the same cache.
    r = run("inputs", out, "--tokens", "1,2,3", "-o", tmp_path / "x.npz")
    assert r.returncode == 3
    assert "largest cache whose inputs fit is %d" % largest in r.stderr
    # Within the limit, export is silent about it.
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "small", "--cache", 64, "--no-sync")
    assert r.returncode == 0 and "calibrate" not in r.stderr


# ---------------------------------------------------------------- 2. inspect exits as export would

def test_inspect_exits_as_export_when_export_would_stop(tmp_path):
    model = copy_fixture(tmp_path)
    (model / "tokenizer.json").unlink()
    r = run("inspect", model)
    assert "EXPORT WOULD STOP" in r.stdout
    e = run("export", model, "-o", tmp_path / "out", "--cache", 32)
    assert e.returncode == 3
    assert r.returncode == e.returncode
    rep = json.loads(run("inspect", model, "--json").stdout)
    assert rep["resources"]["exit_status"] == 3


# ---------------------------------------------------------------- 3. architectures no adapter can take

@pytest.mark.parametrize("edit,why", [
    (lambda c: c.update(architectures=["MixtralForCausalLM"], model_type="mixtral", num_local_experts=8,
                        num_experts_per_tok=2), "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["Qwen2MoeForCausalLM"], model_type="qwen2_moe", num_experts=60),
     "mixture of experts: not supported"),
    (lambda c: c.update(architectures=["MambaForCausalLM"], model_type="mamba", state_size=16),
     "state-space model, not a transformer decoder"),
])
def test_unsupported_kinds_are_told_why(tmp_path, edit, why):
    model = copy_fixture(tmp_path, edit=edit)
    for cmd in (["inspect", model], ["export", model, "-o", tmp_path / "out", "--cache", 32]):
        r = run(*cmd)
        assert r.returncode == 4, r.stderr
        assert why in r.stderr
        assert "pass --adapter" not in r.stderr and "force" not in r.stderr


def test_forcing_an_adapter_on_a_mixture_of_experts_is_refused_with_the_reason(tmp_path):
    model = copy_fixture(tmp_path, edit=lambda c: c.update(architectures=["MixtralForCausalLM"], model_type="mixtral",
                                                            num_local_experts=8))
    r = run("export", model, "-o", tmp_path / "out", "--cache", 32, "--adapter", "qwen2")
    assert r.returncode == 4
    assert "--adapter qwen2 cannot export this model: mixture of experts: not supported" in r.stderr
    assert not (tmp_path / "out").exists()


def test_unknown_dense_architecture_still_gets_the_adapter_hint(tmp_path):
    model = copy_fixture(tmp_path, edit=lambda c: c.update(architectures=["FooForCausalLM"], model_type="foo"))
    r = run("inspect", model)
    assert r.returncode == 4
    assert "--adapter NAME to force one" in r.stderr


# ---------------------------------------------------------------- 4. command line

def test_command_typo_before_options_is_reported_first(tmp_path):
    r = run("exprot", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x")
    assert r.returncode == 2
    assert "unknown command 'exprot'" in r.stderr and "did you mean export" in r.stderr
    assert "unknown option" not in r.stderr


def test_conversion_errors_in_the_tools_words(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "x", "--cache", "abc")
    assert r.returncode == 2
    assert "Could not convert" not in r.stderr
    assert "--cache: 'abc' is not a whole number (see llm2hef export --help)" in r.stderr
    r = run("inspect", FIXTURES / "qwen2-tiny", "--prefill", "1.5")
    assert r.returncode == 2 and "Could not convert" not in r.stderr
    assert "--prefill: '1.5' is not a whole number" in r.stderr


def test_export_help_shows_cache_and_prefill_optional():
    out = run("export", "--help").stdout
    assert out.splitlines()[0].startswith("Usage: llm2hef export MODEL -o OUT [--cache N] [--prefill P]")


def test_inspect_help_lists_adapter():
    out = run("inspect", "--help").stdout
    assert any(line.strip().startswith("--adapter NAME") for line in out.splitlines())


# ---------------------------------------------------------------- 5. -q / -v, --version

COMMANDS = [["adapters"], ["export"], ["inputs"], ["calibrate"], ["lint"], ["inspect"], ["package"], ["help"],
            ["har"], ["har", "inspect"], ["har", "fix"], ["har", "lines"],
            ["hef"], ["hef", "inspect"], ["hef", "check"], ["hef", "set-config"],
            ["registry"], ["registry", "search"], ["registry", "install"], ["registry", "list"],
            ["registry", "uninstall"], ["registry", "keys"], ["registry", "sign"], ["registry", "collect"],
            ["registry", "verify"], ["registry", "manifest"], ["registry", "index"]]


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
def test_quiet_and_verbose_on_every_command(cmd):
    for flag in ("-q", "-v", "--quiet", "--verbose"):
        r = run(*cmd, flag, timeout=60)
        assert "unknown option" not in r.stderr and "unexpected argument" not in r.stderr, (flag, r.stderr)


def test_quiet_and_verbose_run(tmp_path):
    for flag in ("-q", "-v"):
        r = run("inspect", FIXTURES / "qwen2-tiny", "--cache", 32, flag)
        assert r.returncode == 0, r.stderr
        assert run(flag, "adapters").returncode == 0


def test_verbose_tells_what_is_done(tmp_path):
    out = tmp_path / "o"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--no-sync", "-v")
    assert r.returncode == 0, r.stderr
    assert "info: " in r.stderr and "adapter qwen2" in r.stderr and "matched by architectures" in r.stderr
    assert "info: wrote %s" % (out / "model.onnx") in r.stderr
    quiet = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "p", "--cache", 32, "--no-sync")
    assert "info:" not in quiet.stderr


def test_quiet_silences_warnings(tmp_path):
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "o", "--cache", 32768, "--no-sync", "-q")
    assert r.returncode == 0, r.stderr
    assert "warning" not in r.stderr
    assert run("inspect", FIXTURES / "qwen2-tiny", "-q", "-v").returncode == 2


def test_quiet_export_prints_nothing_but_json_when_asked(tmp_path):
    """-q is errors only: no summary on stdout and no resource-change notes on stderr (llama3-tiny's chat template
    is edited, so it has some); --json is the output asked for, so -q keeps it."""
    loud = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "loud", "--cache", 32, "--no-sync")
    assert loud.returncode == 0 and "resource changes" in loud.stderr and "exported llama3-tiny" in loud.stdout
    r = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "q", "--cache", 32, "--no-sync", "-q")
    assert r.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == ("", "")
    assert (tmp_path / "q" / "manifest.json").is_file()
    j = run("export", FIXTURES / "llama3-tiny", "-o", tmp_path / "j", "--cache", 32, "--no-sync", "-q", "--json")
    assert j.returncode == 0 and j.stderr == "" and json.loads(j.stdout)["cache_size"] == 32


def test_unknown_option_lists_only_the_matching_adapters_options(tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "o", "--cache", 32, "--fooo", "1")
    assert r.returncode == 2
    assert "options of adapter gpt2" in r.stderr and "--gelu" in r.stderr
    assert "sliding-window" not in r.stderr and "(phi)" not in r.stderr


def test_adapters_verbose_still_lists_every_file():
    assert "considered" in run("adapters", "--verbose").stdout.lower() or \
        "loaded" in run("adapters", "-v").stdout


def test_version_prints_commit_and_sdk_fingerprint():
    r = run("--version")
    assert r.returncode == 0
    assert "(commit " in r.stdout
    assert "abi " in r.stdout and "build fingerprint" in r.stdout and "sdk-" in r.stdout


# ---------------------------------------------------------------- 6. compile.py's first screen

@pytest.fixture(scope="module")
def small_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "out"
    r = run("export", FIXTURES / "qwen2-tiny", "-o", out, "--cache", 32, "--prefill", 8, "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def compile_py(export, *args, env=None):
    import sys
    return subprocess.run([sys.executable, str(export / "compile.py"), *map(str, args)], capture_output=True,
                          text=True, timeout=120, env=env)


def test_compile_py_help(small_export):
    r = compile_py(small_export, "--help")
    assert r.returncode == 0, r.stderr
    assert "NPY_PROMOTION_STATE" not in r.stderr  # NumPy >= 2.2 warned on the first line
    assert r.stderr == ""
    options = r.stdout[r.stdout.index("options:"):]
    first = [line.split()[0] for line in options.splitlines()[1:] if line.startswith("  -")]
    assert first[:4] == ["-h,", "--calib-chat", "--calib-text", "--calib-tokens"], first
    # How much text a calibration needs: (64 samples + 4 held out) x 32 tokens.
    flat = " ".join(options.split())
    assert "%d tokens" % ((64 + 4) * 32) in flat and "KB of English text" in flat
    for opt in ("--hw-arch HW_ARCH", "-o OUTPUT, --output OUTPUT"):
        line = next(i for i, option_line in enumerate(options.splitlines()) if option_line.strip().startswith(opt))
        following = options.splitlines()[line].strip()[len(opt):].strip() or options.splitlines()[line + 1].strip()
        assert following and not following.startswith("-"), (opt, following)


def test_compile_py_without_the_dfc_says_where_it_comes_from(small_export, tmp_path):
    import importlib.util
    if importlib.util.find_spec("hailo_sdk_client") is not None:
        pytest.skip("this Python has the DFC")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Some text to calibrate on. " * 200)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    r = compile_py(small_export, "--calib-text", corpus, "--work", tmp_path / "work", env=env)
    assert r.returncode != 0
    assert "hailo_sdk_client" in r.stderr and "is not installed" in r.stderr
    assert "Developer Zone" in r.stderr and ".whl" in r.stderr
    assert "NPY_PROMOTION_STATE" not in r.stderr.splitlines()[0]


# ---------------------------------------------------------------- 8. the rest

import sys  # noqa: E402

sys.path.insert(0, str(REPO / "tools" / "fixtures"))
import hef_writer as hw  # noqa: E402


@pytest.fixture(scope="module")
def gpt2_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpt2") / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16, "--no-progress",
            "--no-sync")
    assert r.returncode == 0, r.stderr
    return out


def write_hef(path, export, **over):
    path.write_bytes(hw.genai_hef(**hw.spec_from_export(export, **over)))
    return path


def test_manifest_findings_print_no_section_dash(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "other.hef", gpt2_export, hidden=96)
    r = run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json")
    assert r.returncode == 1
    assert "[manifest]" in r.stdout and "section -" not in r.stdout, r.stdout
    rep = json.loads(run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json", "--json").stdout)
    manifest = [f for f in rep["findings"] if f["rule"] == "manifest"]
    assert manifest and all(f["section"] != "-" for f in manifest)
    assert any(f["section"] is None for f in manifest)


def test_hef_check_success_prints_the_next_command(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    r = run("hef", "check", hef, "--manifest", gpt2_export / "manifest.json")
    assert r.returncode == 0, r.stdout
    assert "next: llm2hef package %s --manifest %s" % (hef, gpt2_export / "manifest.json") in r.stdout
    assert "next:" not in run("hef", "check", write_hef(tmp_path / "bad.hef", gpt2_export, hidden=96),
                              "--manifest", gpt2_export / "manifest.json").stdout


def test_lm_head_shards_not_dividing_is_a_usage_error_listing_valid_values(tmp_path):
    vocab = json.loads((FIXTURES / "qwen2-tiny" / "config.json").read_text())["vocab_size"]
    r = run("export", FIXTURES / "qwen2-tiny", "-o", tmp_path / "o", "--cache", 32, "--lm-head-shards", 3)
    assert r.returncode == 2, r.stderr
    valid = [k for k in range(1, 65) if vocab % k == 0]
    assert "valid values up to 64: " + ", ".join(map(str, valid)) in r.stderr
    assert not (tmp_path / "o").exists()


def test_inputs_prints_what_it_wrote_and_takes_text(tmp_path, small_export):
    pytest.importorskip("tokenizers")
    import numpy as np
    from tokenizers import Tokenizer
    text = "Hello world, calibrate me"
    ids = Tokenizer.from_file(str(small_export / "resources" / "tokenizer.json")).encode(
        text, add_special_tokens=False).ids
    by_ids = tmp_path / "ids.npz"
    r = run("inputs", small_export, "--tokens", ",".join(map(str, ids)), "-o", by_ids)
    assert r.returncode == 0, r.stderr
    assert "wrote %s" % by_ids in r.stdout and "%d token(s)" % len(ids) in r.stdout
    by_text = tmp_path / "text.npz"
    r = run("inputs", small_export, "--text", text, "-o", by_text)
    assert r.returncode == 0, r.stderr
    assert "wrote %s" % by_text in r.stdout
    a, b = np.load(by_ids), np.load(by_text)
    assert sorted(a.files) == sorted(b.files)
    for k in a.files:
        assert np.array_equal(a[k], b[k]), k
    # -q keeps stdout quiet (compile.py calls it once per sample).
    assert run("inputs", "-q", small_export, "--tokens", "1,2", "-o", tmp_path / "q.npz").stdout == ""
    r = run("inputs", small_export, "--text", text, "--python", tmp_path / "no-python", "-o", tmp_path / "x.npz")
    assert r.returncode == 3 and "--tokens" in r.stderr  # a missing Python is exit 3, as for calibrate


def test_package_takes_the_config_given_to_set_config(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    cfg = json.loads((gpt2_export / "resources" / "hailo-config.json").read_text())
    cfg["chat_template"] += "{# edited with set-config #}"
    new = tmp_path / "new-config.json"
    new.write_text(json.dumps(cfg))
    patched = tmp_path / "patched.hef"
    r = run("hef", "set-config", hef, new, "-o", patched, "--no-progress")
    assert r.returncode == 0, r.stderr
    store = tmp_path / "store"
    store.mkdir()
    args = ["package", patched, "--manifest", gpt2_export / "manifest.json", "--store", store, "--model", "g:1",
            "--no-progress"]
    r = run(*args)
    assert r.returncode == 3 and "--config NEW.json" in r.stderr, r.stderr
    r = run(*args, "--config", new)
    assert r.returncode == 0, r.stderr
    manifest = (store / "manifests" / "g" / "1" / "manifest.json").read_text()
    assert "edited with set-config" in manifest
    # A config that is not the HEF's is still refused, naming that file.
    r = run(*args, "--config", gpt2_export / "resources" / "hailo-config.json", "--force")
    assert r.returncode == 3 and "hailo-config.json" in r.stderr


def test_no_hailo_ollama_folder_names_the_folder_searched(tmp_path, gpt2_export):
    hef = write_hef(tmp_path / "model.hef", gpt2_export)
    data, home = tmp_path / "xdg", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    env = dict(os.environ, XDG_DATA_HOME=str(data), HOME=str(home), XDG_DATA_DIRS=str(tmp_path / "nowhere"))
    r = subprocess.run([str(BIN), "package", str(hef), "--manifest", str(gpt2_export / "manifest.json"), "--model",
                        "g:1"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2
    assert "or create %s" % (data / "hailo-ollama") in r.stderr, r.stderr
    assert "~/.local/share" not in r.stderr


def llama_shaped(folder, hidden=4096, layers=32, heads=32, vocab=32000, ffn=11008, positions=32768):
    """A Llama-2-7B-shaped checkpoint whose weights are sparse zeros (header
    and size only: inspect reads shapes, never values)."""
    folder.mkdir(parents=True)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
           "intermediate_size": ffn, "vocab_size": vocab, "max_position_embeddings": positions,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False,
           "torch_dtype": "float16"}
    (folder / "config.json").write_text(json.dumps(cfg))
    shapes = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden],
              "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        p = "model.layers.%d." % i
        for w in ("q", "k", "v", "o"):
            shapes[p + "self_attn.%s_proj.weight" % w] = [hidden, hidden]
        shapes[p + "mlp.gate_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.up_proj.weight"] = [ffn, hidden]
        shapes[p + "mlp.down_proj.weight"] = [hidden, ffn]
        shapes[p + "input_layernorm.weight"] = [hidden]
        shapes[p + "post_attention_layernorm.weight"] = [hidden]
    header, offset = {}, 0
    for name, shape in sorted(shapes.items()):
        size = 2
        for d in shape:
            size *= d
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(blob).to_bytes(8, "little"))
        f.write(blob)
        f.truncate(8 + len(blob) + offset)  # sparse zeros
    return folder


def test_inspect_warns_close_to_the_device_memory(tmp_path):
    model = llama_shaped(tmp_path / "llama-7b-shape")
    base = json.loads(run("inspect", model, "--cache", 2048, "--json").stdout)
    m, d = base["memory"], base["dims"]
    per_position = 2 * d["layers"] * d["heads"] * d["head_dim"]
    fixed = m["total_bytes"] - m["kv_cache_bytes"]
    device = m["device_bytes"]
    near = (int(device * 0.98) - fixed) // per_position
    far = (int(device * 0.80) - fixed) // per_position
    assert 2048 < far < near <= 32768
    rep = json.loads(run("inspect", model, "--cache", near, "--json").stdout)
    assert rep["memory"]["fits"] is True
    assert "within 5%" in rep["memory"]["warning"]
    assert "warning: the estimate is within 5%" in run("inspect", model, "--cache", near).stdout
    rep = json.loads(run("inspect", model, "--cache", far, "--json").stdout)
    assert rep["memory"]["fits"] is True and "warning" not in rep["memory"]


def test_validate_on_device_empty_prompt_points_to_prompt(small_export):
    text = (small_export / "validate_on_device.py").read_text()
    line = next(each for each in text.splitlines() if "tokenizes to nothing" in each)
    assert "--prompt" in line


def test_writing_an_adapter_shows_the_current_sdk_abi():
    import re
    abi = re.search(r"#define LLM2HEF_ADAPTER_ABI_VERSION (\d+)u",
                    (REPO / "sdk" / "include" / "llm2hef" / "sdk" / "abi.hpp").read_text()).group(1)
    doc = (REPO / "docs" / "writing-an-adapter.md").read_text()
    shown = re.findall(r'"sdk_abi": (\d+)', doc)
    assert shown and all(v == abi for v in shown), (shown, abi)


def test_the_example_index_entries_are_for_the_current_sdk_abi():
    """registry/index is the worked example of publishing (docs/writing-an-adapter.md): an entry left at an old ABI
    would be listed as incompatible by `registry search` on the llm2hef it documents."""
    import re
    abi = int(re.search(r"#define LLM2HEF_ADAPTER_ABI_VERSION (\d+)u",
                        (REPO / "sdk" / "include" / "llm2hef" / "sdk" / "abi.hpp").read_text()).group(1))
    entries = sorted((REPO / "registry" / "index").rglob("*.json"))
    assert entries
    stale = {str(e.relative_to(REPO)): json.loads(e.read_text())["sdk_abi"] for e in entries}
    assert all(v == abi for v in stale.values()), (stale, abi)


def test_published_adapters_get_an_origin_only_rpath():
    cmake = (REPO / "cmake" / "Llm2hefAdapter.cmake").read_text()
    # The install RPATH list: only $ORIGIN-relative entries are appended.
    appended = [line.strip() for line in cmake.splitlines() if line.strip().startswith("list(APPEND rpath")]
    assert appended and all('"$ORIGIN/' in line for line in appended), appended


def test_inspect_sizes_calibration_as_compile_py_does(small_export):
    """inspect's sample size and DFC RAM are compile.py's own (its memory check)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("generated_compile", small_export / "compile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = json.loads((small_export / "manifest.json").read_text())
    rep = json.loads(run("inspect", FIXTURES / "qwen2-tiny", "--cache", m["cache_size"], "--prefill", m["prefill"],
                         "--json").stdout)
    cal = rep["calibration"]
    assert cal["sample_bytes"] == mod.calibration_sample_bytes()
    assert cal["ram_bytes"] == mod.DFC_MINIMUM_RAM + (cal["samples"] + 1) * mod.calibration_sample_bytes()
