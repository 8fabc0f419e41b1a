"""A newcomer's rough edges (issue 40, part 3), each through the real binary.

inspect stops on a GGUF export refuses and says which file to get; it warns
about the hidden sizes where fidelity drops on the chip, about calibration
runs past a 32 GB machine and about models tight on the 8 GB device; --plan
refuses a plan made for another model or cache; a GGUF's network name comes
from its metadata, not its file name; `export` names both its required
arguments and lists every file it writes; a mistyped path gets a suggestion;
package's details come from the export and the plan.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURES = REPO / "tests" / "fixtures"
TIMEOUT_S = 120


def run(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=TIMEOUT_S)


# ---------------------------------------------------------------- checkpoints written here

def write_safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    """Zero F16 tensors of these shapes (inspect reads shapes only)."""
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        f.truncate(8 + len(text) + offset)  # zeros, without building them in memory


def llama_like(tmp: Path, *, hidden: int, heads: int, kv_heads: int, head_dim: int, layers: int) -> Path:
    """llama3-tiny's tokenizer and config with other shapes."""
    model = tmp / f"llama-h{hidden}"
    model.mkdir()
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(FIXTURES / "llama3-tiny" / f, model / f)
    config = json.loads((FIXTURES / "llama3-tiny" / "config.json").read_text())
    inter, vocab = 64, config["vocab_size"]
    config.update(hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                  num_hidden_layers=layers, intermediate_size=inter)
    (model / "config.json").write_text(json.dumps(config))
    t = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden], "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        p = f"model.layers.{i}."
        t |= {p + "input_layernorm.weight": [hidden], p + "post_attention_layernorm.weight": [hidden],
              p + "self_attn.q_proj.weight": [heads * head_dim, hidden],
              p + "self_attn.k_proj.weight": [kv_heads * head_dim, hidden],
              p + "self_attn.v_proj.weight": [kv_heads * head_dim, hidden],
              p + "self_attn.o_proj.weight": [hidden, heads * head_dim],
              p + "mlp.gate_proj.weight": [inter, hidden], p + "mlp.up_proj.weight": [inter, hidden],
              p + "mlp.down_proj.weight": [hidden, inter]}
    write_safetensors(model / "model.safetensors", t)
    return model


def gguf_bytes(kvs, tensors, data: bytes, align: int = 32) -> bytes:
    """A GGUF v3 file field by field (docs/gguf.md)."""
    def s(x: str) -> bytes:
        return struct.pack("<Q", len(x.encode())) + x.encode()
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        out += s(k) + struct.pack("<I", t) + v
    for n, ne, t, off in tensors:
        out += s(n) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", t, off)
    return out + b"\0" * (-len(out) % align) + data


def gguf_string(x: str) -> bytes:
    return struct.pack("<Q", len(x.encode())) + x.encode()


# ---------------------------------------------------------------- 1. a GGUF type export refuses

def test_inspect_stops_on_an_undequantized_gguf_as_export_does_and_names_the_file_to_get(tmp_path):
    kvs = [("general.architecture", 8, gguf_string("llama")), ("llama.block_count", 4, struct.pack("<I", 1)),
           ("llama.embedding_length", 4, struct.pack("<I", 32)),
           ("llama.attention.head_count", 4, struct.pack("<I", 2))]
    # IQ4_NL (ggml type 20): 32 values in 18 bytes; 256 values here.
    path = tmp_path / "model-IQ4_NL.gguf"
    path.write_bytes(gguf_bytes(kvs, [("token_embd.weight", [32, 8], 20, 0)], b"\0" * 160))
    inspect = run("inspect", path)
    export = run("export", path, "-o", tmp_path / "out")
    assert inspect.returncode == export.returncode == 4, (inspect.stdout, inspect.stderr, export.stderr)
    assert inspect.stderr == export.stderr  # the same refusal, from the same place
    assert "IQ4_NL" in inspect.stderr and "fits" not in inspect.stdout
    # Which file to get, not only which types are read (that list names F16 too).
    assert "as an F16 or BF16 GGUF" in inspect.stderr and "a Q8_0 GGUF" in inspect.stderr, inspect.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- 2. warnings beyond fits / does not fit

def test_inspect_warns_on_hidden_size_with_known_fidelity_loss_and_on_calibration_ram(tmp_path):
    # hidden 576 (SmolLM2-135M's), 36 heads at cache 2048: compile.py's 64
    # calibration samples hold a 2048 x 36 x 2048 mask each, past 32 GB.
    model = llama_like(tmp_path, hidden=576, heads=36, kv_heads=12, head_dim=16, layers=1)
    r = run("inspect", model, "--cache", 2048, "--json")
    assert r.returncode == 0, r.stderr
    js = json.loads(r.stdout)
    assert "576" in js["fidelity_warning"] and "llm2hef calibrate" in js["fidelity_warning"]
    why = js["calibration"]["memory_warning"]
    assert "32 GB" in why and "--calib-size" in why and "64 GB: both fit" in why, why
    text = run("inspect", model, "--cache", 2048).stdout
    assert text.count("warning: ") >= 2 and "section 12" in text
    # A smaller model and cache: none of these warnings.
    small = run("inspect", FIXTURES / "llama3-tiny", "--cache", 256, "--json")
    js = json.loads(small.stdout)
    assert "fidelity_warning" not in js and "memory_warning" not in js["calibration"]
    assert js["memory"]["tight"] is False


def test_inspect_says_when_the_model_is_tight_on_the_device(tmp_path):
    # 20 layers caching 64 heads x 128 at cache 8192: about 2.5 GiB of K/V, more
    # than the largest model Hailo ships for the device, well under 8 GiB.
    model = llama_like(tmp_path, hidden=64, heads=64, kv_heads=1, head_dim=128, layers=22)
    cfg = json.loads((model / "config.json").read_text())
    cfg["max_position_embeddings"] = 8192
    (model / "config.json").write_text(json.dumps(cfg))
    r = run("inspect", model, "--cache", 8192, "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)["memory"]
    assert m["fits"] is True and m["tight"] is True, m
    text = run("inspect", model, "--cache", 8192).stdout
    assert "tight: " in text and "Llama3.2-3B-Instruct" in text


# ---------------------------------------------------------------- 3. --plan for another model or cache

def plan(path: Path, **fields) -> Path:
    doc = {"version": 1, "plan": {"default_mode": "a8_w4", "lines": []},
           "budget": {"extra_weight_bytes": 0, "extra_activation_bytes": 0, "weight_bytes_default": 0}} | fields
    path.write_text(json.dumps(doc))
    return path


def test_inspect_plan_refuses_a_plan_for_another_model_or_cache(tmp_path):
    gpt2 = FIXTURES / "gpt2-tiny"
    ok = plan(tmp_path / "ok.json", model="gpt2-tiny", calibration={"cache_size": 32})
    assert run("inspect", gpt2, "--cache", 32, "--plan", ok).returncode == 0
    other = plan(tmp_path / "other.json", model="qwen3-tiny", calibration={"cache_size": 32})
    r = run("inspect", gpt2, "--cache", 32, "--plan", other)
    assert r.returncode == 3 and str(other) in r.stderr and "'qwen3-tiny'" in r.stderr and "'gpt2-tiny'" in r.stderr
    r = run("inspect", gpt2, "--cache", 64, "--plan", ok)
    assert r.returncode == 3 and "calibration.cache_size" in r.stderr and "--cache 32" in r.stderr, r.stderr


# ---------------------------------------------------------------- 4. a GGUF's name from its metadata

def test_gguf_network_name_comes_from_its_metadata_not_its_file_name(tmp_path):
    gguf = pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
    del gguf
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules["make_gguf_fixtures"] = fx
    spec.loader.exec_module(fx)
    made = tmp_path / "made"
    path = fx.convert(FIXTURES / "qwen3-tiny", made, "Q4_1")  # general.name "qwen3-tiny"
    folder = tmp_path / "Qwen3-Tiny-GGUF"
    folder.mkdir()
    renamed = folder / "Qwen3-Tiny-Q4_1.gguf"
    shutil.move(str(path), renamed)
    for t in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(FIXTURES / "qwen3-tiny" / t, folder / t)
    out = tmp_path / "out"
    r = run("export", folder, "-o", out, "--cache", 32, "--prefill", 8, "--json")
    assert r.returncode == 0, r.stderr
    manifest = json.loads(r.stdout)
    assert manifest["model"]["name"] == "qwen3-tiny"
    assert all("q4_1" not in g for g in manifest["dfc"]["network_groups"]), manifest["dfc"]
    # The file alone (no tokenizer: inspect says export would stop) is named the same.
    assert json.loads(run("inspect", renamed, "--cache", 32, "--json").stdout)["name"] == "qwen3-tiny"

    # general.basename with its size label and fine-tune wins over general.name.
    writer = fx.gguf.GGUFWriter

    class WithBasename(writer):
        def write_header_to_file(self, *args, **kwargs):
            self.add_string("general.basename", "Qwen3")
            self.add_string("general.size_label", "0.6B")
            self.add_string("general.finetune", "Instruct")
            return super().write_header_to_file(*args, **kwargs)

    fx.gguf.GGUFWriter = WithBasename
    try:
        path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "basename", "Q8_0")
    finally:
        fx.gguf.GGUFWriter = writer
    js = json.loads(run("inspect", path, "--cache", 32, "--json").stdout)
    assert js["name"] == "Qwen3-0.6B-Instruct", js["name"]


# ---------------------------------------------------------------- 5. export's arguments and help; template source

def test_export_without_arguments_names_both_required_arguments():
    r = run("export")
    assert r.returncode == 2 and "MODEL" in r.stderr and "-o OUT" in r.stderr, r.stderr


def test_export_help_lists_every_file_an_export_writes(tmp_path):
    out = tmp_path / "out"
    assert run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 16, "--prefill", 4, "-q").returncode == 0
    help_text = run("export", "--help").stdout
    assert "GGUF" in help_text
    for p in out.iterdir():
        assert p.name in help_text, p.name
    for p in (out / "resources").iterdir():
        assert p.name in help_text, p.name


def test_inspect_says_where_a_ggufs_chat_template_came_from(tmp_path):
    pytest.importorskip("gguf", reason="gguf (gguf-py) is pinned in tests/requirements.txt")
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("make_gguf_fixtures", REPO / "tools/fixtures/make_gguf_fixtures.py")
    fx = importlib.util.module_from_spec(spec)
    sys.modules["make_gguf_fixtures"] = fx
    spec.loader.exec_module(fx)
    path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "made", "F16")
    folder = tmp_path / "folder"
    folder.mkdir()
    shutil.copy(path, folder / path.name)
    shutil.copy(FIXTURES / "qwen3-tiny" / "tokenizer.json", folder / "tokenizer.json")
    shutil.copy(FIXTURES / "qwen3-tiny" / "tokenizer_config.json", folder / "tokenizer_config.json")
    beside = json.loads(run("inspect", folder, "--cache", 32, "--json").stdout)["resources"]
    assert "the folder's file, not the GGUF metadata" in beside["chat_template_source"], beside

    # A GGUF carrying its tokenizer and template (as llama.cpp's converter
    # writes them, test_gguf_tokenizer.add_vocabulary): named by its key.
    from test_gguf_tokenizer import add_vocabulary
    vocab = json.loads((FIXTURES / "qwen3-tiny" / "config.json").read_text())["vocab_size"]
    writer = fx.gguf.GGUFWriter

    class WithVocabulary(writer):
        def write_header_to_file(self, *args, **kwargs):
            add_vocabulary(self, FIXTURES / "qwen3-tiny", "qwen2", vocab)
            return super().write_header_to_file(*args, **kwargs)

    fx.gguf.GGUFWriter = WithVocabulary
    try:
        path = fx.convert(FIXTURES / "qwen3-tiny", tmp_path / "with-vocabulary", "F16")
    finally:
        fx.gguf.GGUFWriter = writer
    r = run("inspect", path, "--cache", 32, "--json")
    assert r.returncode == 0, r.stderr
    source = json.loads(r.stdout)["resources"]["chat_template_source"]
    assert source == f"the GGUF metadata of {path} (key tokenizer.chat_template)", source


# ---------------------------------------------------------------- 6. did you mean

@pytest.mark.parametrize("typed", ["gpt2-tinyy", "GPT2-tiny", "gpt-2tiny"])
def test_a_near_miss_path_gets_a_suggestion(tmp_path, typed):
    model = tmp_path / "gpt2-tiny"
    shutil.copytree(FIXTURES / "gpt2-tiny", model)
    for command in (["inspect", tmp_path / typed], ["export", tmp_path / typed, "-o", tmp_path / "out"]):
        r = run(*command)
        assert r.returncode == 3 and f"did you mean {model}?" in r.stderr, r.stderr
    far = run("inspect", tmp_path / "something-else")
    assert far.returncode == 3 and "did you mean" not in far.stderr


# ---------------------------------------------------------------- 7. package details from the export and the plan

def test_package_details_come_from_the_export_and_the_plan(tmp_path):
    import sys
    sys.path.insert(0, str(REPO / "tools" / "fixtures"))
    import hef_writer as hw

    out = tmp_path / "export"
    r = run("export", FIXTURES / "gpt2-tiny", "-o", out, "--cache", 64, "--prefill", 16, "--no-progress", "--json")
    assert r.returncode == 0, r.stderr
    parameters = json.loads(r.stdout)["model"]["parameters"]
    assert parameters == json.loads(run("inspect", FIXTURES / "gpt2-tiny", "--json").stdout)["parameters"]
    hef = tmp_path / "model.hef"
    hef.write_bytes(hw.genai_hef(**hw.spec_from_export(out)))

    def details(store, *extra):
        r = run("package", hef, "--manifest", out / "manifest.json", "--store", store, "--model", "tiny",
                "--no-progress", *extra)
        assert r.returncode == 0, r.stderr
        return json.loads((store / "manifests" / "tiny" / "latest" / "manifest.json").read_text())["details"]

    d = details(tmp_path / "a")
    assert d["parameter_size"] == "%.0fK" % (parameters / 1e3) and d["quantization_level"] == "A8W4", d
    # compile.py applies OUT/quantization.json by itself: so does package's details.
    plan(out / "quantization.json", model="gpt2-tiny", calibration={"cache_size": 64},
         plan={"default_mode": "a8_w4", "lines": [
             {"onnx_node": "/a", "precision_mode": "a16_w16"}, {"onnx_node": "/b", "precision_mode": "a16_w16"},
             {"onnx_node": "/c", "precision_mode": "a8_w8"}]})
    assert details(tmp_path / "b")["quantization_level"] == "A8W4 + 2 A16W16 + 1 A8W8"
    other = plan(tmp_path / "other.json", model="gpt2-tiny", calibration={"cache_size": 128})
    r = run("package", hef, "--manifest", out / "manifest.json", "--store", tmp_path / "c", "--model", "tiny",
            "--plan", other)
    assert r.returncode == 3 and "calibration.cache_size" in r.stderr and not (tmp_path / "c").exists(), r.stderr


# ---------------------------------------------------------------- 9. rehearsing package and the check without a chip

def test_rehearsal_without_a_chip(tmp_path):
    """The commands of docs/on-device-check.md, "Rehearsing `package` and the
    check without a chip", as written there (paths moved into tmp_path)."""
    pytest.importorskip("onnxruntime")
    import sys
    doc = (REPO / "docs" / "on-device-check.md").read_text()
    section = doc.split("## Rehearsing `package` and the check without a chip")[1]
    block = section.split("```sh\n")[1].split("```")[0].replace("\\\n", " ")
    import shlex
    commands = [shlex.split(line) for line in block.splitlines() if line.strip()]
    assert [c[0] if c[0] != "PYTHONPATH=tests/standins" else c[1] for c in commands] == \
        ["llm2hef", "python3", "llm2hef", "llm2hef", "python3"], commands
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAILO_STANDIN")}
    for words in commands:
        words = [w.replace("/tmp/", str(tmp_path) + "/") for w in words]
        if words[0].startswith("PYTHONPATH="):
            env["PYTHONPATH"] = str(REPO / words.pop(0).split("=", 1)[1])
        if words[0] == "llm2hef":
            words[0] = str(BIN)
        elif words[0] == "python3":
            words[0] = sys.executable
        words = [str(REPO / w) if w.startswith(("tests/", "tools/")) else w for w in words]
        r = subprocess.run(words, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
        assert r.returncode == 0, (words, r.stdout, r.stderr)
    assert "PASS" in r.stdout, r.stdout
    assert (tmp_path / "rehearse-store" / "manifests" / "rehearse" / "latest" / "manifest.json").is_file()


# ---------------------------------------------------------------- 10. README's two commands

def test_readme_two_commands_say_how_long_who_needs_tests_and_the_calib_flag_export_prints(tmp_path):
    r = run("export", FIXTURES / "gpt2-tiny", "-o", tmp_path / "out", "--cache", 16, "--prefill", 4)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    next_line = next(line for line in lines if line.startswith("next: "))  # calibrate (issue 40)
    then_line = next(line for line in lines if line.startswith("then: "))  # compile.py
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Two commands")[1].split("\n## ")[0]
    for line, command in ((next_line, "calibrate out/gpt2-tiny"), (then_line, "compile.py")):
        flag = next(w for w in line.split() if w.startswith("--calib-"))
        assert f"{command} {flag} " in section, (line, section)  # the flags export's lines name
    assert "20 minutes" in section and "34" in section, section
    test_line = next(line for line in section.splitlines() if "tools/test.sh" in line)
    assert "contributors only" in test_line, test_line
