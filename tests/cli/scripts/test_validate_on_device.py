"""validate_on_device.py end to end against the stand-in `hailo_platform`
(tests/standins/, put on PYTHONPATH here only).

The stand-in's "chip" computes with onnxruntime on the export's model.onnx, so
the script's logic is what is checked: groups found by suffix, the runtime's
chunking, cache offsets, bottom-aligned rows, uint8 mask, tiled RoPE tables,
uint16 embedding codes, and its fp32 reference. The reference is checked
independently here against `llm2hef inputs` (host_inputs.cpp) run through
onnxruntime by this test. A "chip" made wrong (perturbed logits) must be
reported as disagreeing, with exit status 1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from llm2hef_cli import BIN, FIXTURES, REPO

STANDINS = REPO / "tests" / "standins"
CACHE, PREFILL = 64, 8
# 12 tokens with the stand-in tokenizer on these fixtures' byte-level vocabularies:
# one remainder chunk (12 % 8) and one full chunk.
PROMPT = "hello world, the fox"
STEPS = 5


def export(src: str, out: Path, *extra: str) -> Path:
    subprocess.run([str(BIN), "export", str(FIXTURES / src), "-o", str(out), "--cache", str(CACHE),
                    "--prefill", str(PREFILL), "--no-progress", *extra], check=True, capture_output=True)
    (out / "model.hef").write_bytes(b"stand-in: not a HEF")
    return out


@pytest.fixture(scope="module", params=[("gpt2-tiny", ("--gelu", "tanh")), ("llama3-tiny", ())], ids=["gpt2", "llama3"])
def exported(request, tmp_path_factory):
    src, extra = request.param
    return export(src, tmp_path_factory.mktemp(src) / "out", *extra)


def run_script(out: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAILO_STANDIN")}
    env["PYTHONPATH"] = str(STANDINS)
    env.update(env_extra)
    return subprocess.run([sys.executable, str(out / "validate_on_device.py"), "--hef", str(out / "model.hef"), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def expected_positions(prompt_len: int, steps: int) -> list[int]:
    """Chunk ends of the runtime's split (remainder first, then full chunks),
    then one position per tbt token."""
    ends, first = [], prompt_len % PREFILL
    if first:
        ends.append(first)
    ends += list(range(first + PREFILL, prompt_len + 1, PREFILL))
    return [e - 1 for e in ends] + [prompt_len + i for i in range(steps)]


def onnx_logits_from_llm2hef_inputs(out: Path, tokens: list[int], tmp: Path) -> np.ndarray:
    npz = tmp / "inputs.npz"
    subprocess.run([str(BIN), "inputs", str(out), "--tokens", ",".join(map(str, tokens)), "-o", str(npz)],
                   check=True, capture_output=True)
    data = dict(np.load(npz))
    npz.unlink()  # `llm2hef inputs` does not replace a file without --force
    sess = ort.InferenceSession(str(out / "model.onnx"), providers=["CPUExecutionProvider"])
    feeds = {i.name: data[i.name] for i in sess.get_inputs()}
    return sess.run(None, feeds)[0].reshape(-1)


def test_export_writes_the_script(exported):
    script = exported / "validate_on_device.py"
    assert script.is_file() and os.access(script, os.X_OK)
    manifest = json.loads((exported / "manifest.json").read_text())
    assert "validate_on_device.py" in manifest["files"]


def test_agrees_end_to_end(exported, tmp_path):
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", str(STEPS), "--json")
    assert r.returncode == 0, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    scope = json.loads((exported / "manifest.json").read_text())["dfc"]["scope"]

    gen = rep["generation"]
    assert gen["generated_tokens"] >= 1 and gen["generated_tokens"] <= STEPS
    assert gen["time_to_first_token_s"] > 0
    if gen["generated_tokens"] > 1:
        assert gen["tokens_per_second"] > 0

    a = rep["agreement"]
    assert a["prefill_group"] == scope + "__prefill" and a["tbt_group"] == scope + "__tbt"
    assert a["embeddings"].startswith("embeddings.bin")
    n = a["prompt_tokens"]
    assert n > PREFILL and n % PREFILL, "the prompt must need a remainder chunk and a full chunk"
    positions = [p["position"] for p in rep["positions"]]
    assert positions == expected_positions(n, STEPS)
    groups = [p["group"] for p in rep["positions"]]
    chunks = len(positions) - STEPS
    assert groups == [scope + "__prefill"] * chunks + [scope + "__tbt"] * STEPS

    # The stand-in chip sees uint16 embedding codes: agreement is near exact.
    for p in rep["positions"]:
        assert p["cosine"] > 0.9999 and p["agree"], p
    assert rep["summary"]["ok"] and rep["summary"]["top1_agreement"] == 1.0

    # The script's fp32 reference equals model.onnx on `llm2hef inputs`.
    tokens = a["tokens"]
    for p in rep["positions"]:
        ref = onnx_logits_from_llm2hef_inputs(exported, tokens[: p["position"] + 1], tmp_path)
        assert int(np.argmax(ref)) == p["fp32_top1"]
        assert int(np.argmax(ref)) == p["chip_top1"]
    # The continuation is the fp32 graph's greedy choice.
    for i in range(n, n + STEPS):
        ref = onnx_logits_from_llm2hef_inputs(exported, tokens[:i], tmp_path)
        assert tokens[i] == int(np.argmax(ref))


def test_text_report(exported):
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", "2")
    assert r.returncode == 0, r.stderr + r.stdout
    assert "time to first token" in r.stdout and "tokens/s" in r.stdout
    assert "PASS" in r.stdout and "FAIL" not in r.stdout


def test_wrong_chip_is_reported(exported):
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", str(STEPS), "--json", HAILO_STANDIN_PERTURB="4")
    assert r.returncode == 1, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    assert not rep["summary"]["ok"]
    assert rep["summary"]["mean_cosine"] < 0.95
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", str(STEPS), HAILO_STANDIN_PERTURB="4")
    assert r.returncode == 1 and "FAIL: the chip disagrees" in r.stdout


# Faults planted in a copy of the script: each makes its inputs differ from what
# the runtime builds, and the stand-in chip must then disagree with the
# reference (or refuse the run). Anchors are source lines of the script.
MUTATIONS = {
    # (an offset of all positions would be invisible to RoPE models: only distances matter)
    "positions spaced by two": ("np.arange(self.usage, self.usage + k)",
                                "np.arange(2 * self.usage, 2 * (self.usage + k), 2)"),
    "mask allows the unused cache": ("mask = np.zeros((rows, n), np.uint8)",
                                     "mask = np.full((rows, n), self.allowed, np.uint8)"),
    "q tables swapped": ("np.tile(cos if PE_COSINE[role] else sin, (1, tiles[PE_TILING[role]]))",
                         "np.tile((cos if PE_COSINE[role] else sin) if PE_TILING[role] == 'k' "
                         "else (sin if PE_COSINE[role] else cos), (1, tiles[PE_TILING[role]]))"),
    "cache offset moved by one too many": ("_update_cache_offset(int(new_tokens))",
                                           "_update_cache_offset(int(new_tokens) + 1)"),
    "chunks in the wrong order": ("for a, b in chunks(len(prompt_tokens), export.prefill):",
                                  "for a, b in sorted(chunks(len(prompt_tokens), export.prefill), "
                                  "key=lambda c: c[0] - c[1]):"),
    "embedding rows top-aligned": ("feeds = {EMBEDDINGS: self.window[-rows:]",
                                   "feeds = {EMBEDDINGS: self.window[:rows][::-1]"),
}


@pytest.mark.parametrize("fault", sorted(MUTATIONS))
def test_planted_script_faults_are_caught(exported, fault, tmp_path):
    anchor, replacement = MUTATIONS[fault]
    text = (exported / "validate_on_device.py").read_text()
    assert anchor in text, "the script changed: update the anchor of " + fault
    mutated = tmp_path / "out"
    mutated.mkdir()
    for f in exported.iterdir():
        (mutated / f.name).symlink_to(f)
    (mutated / "validate_on_device.py").unlink()
    (mutated / "validate_on_device.py").write_text(text.replace(anchor, replacement, 1))
    r = run_script(mutated, "--prompt", PROMPT, "--max-tokens", str(STEPS), "--json")
    assert r.returncode == 1, (fault, r.returncode, r.stderr[-2000:])
    if "StandInLimitation" in r.stderr:
        return  # refused, as the device would not compute it either
    assert not json.loads(r.stdout)["summary"]["ok"]


def test_three_groups_are_refused(exported):
    """A HEF with the base scope as a third group: genai then looks for
    base_model__prefill and finds none (llm_server.cpp), so the check stops."""
    scope = json.loads((exported / "manifest.json").read_text())["dfc"]["scope"]
    groups = ",".join([scope, scope + "__prefill", scope + "__tbt"])
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", "1", HAILO_STANDIN_GROUPS=groups)
    assert r.returncode == 3
    assert "name-suffix 'base_model__prefill'" in r.stderr


def test_groups_without_suffix_are_refused(exported):
    r = run_script(exported, "--prompt", PROMPT, "--skip-generate", HAILO_STANDIN_GROUPS="one,two")
    assert r.returncode == 3
    assert "prefill" in r.stderr


def test_embeddings_quantized_when_the_hef_cannot_be_read(exported):
    """Without HEF._get_external_resources the script quantizes embeddings.npy
    with input_layer1's quant info, as HailoRT quantizes inputs."""
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", "2", "--json", HAILO_STANDIN_NO_RESOURCE_ACCESS="1")
    assert r.returncode == 0, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    assert rep["agreement"]["embeddings"].startswith("resources/embeddings.npy quantized")
    assert all(p["cosine"] > 0.9999 and p["agree"] for p in rep["positions"])


def test_only_prefill_when_no_tokens(exported):
    r = run_script(exported, "--prompt", PROMPT, "--max-tokens", "0", "--json")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert [p["position"] for p in rep["positions"]] == expected_positions(rep["agreement"]["prompt_tokens"], 0)


def test_bad_input(exported, tmp_path):
    r = run_script(exported, "--hef", str(tmp_path / "missing.hef"))
    assert r.returncode == 3 and "missing.hef" in r.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, str(exported / "validate_on_device.py"), "--hef", str(exported / "model.hef")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 3 and "hailo_platform" in r.stderr
    r = run_script(exported, "--max-tokens", "-1")
    assert r.returncode == 2


# The prompt as a chat user sends it: a user message through the stored
# chat template, rendered as genai renders it (bos_token empty, so the BOS a
# BOS-sensitive model needs comes only from the literal export writes at the
# template's start); --raw sends the text as it is, without BOS.

@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    return export("gemma3-tiny", tmp_path_factory.mktemp("gemma3-tiny") / "out")


def special_id(out: Path, content: str) -> int:
    tok = json.loads((out / "resources" / "tokenizer.json").read_text())
    return next(t["id"] for t in tok["added_tokens"] if t["content"] == content)


def decoder(out: Path):
    sys.path.insert(0, str(STANDINS))
    try:
        from hailo_platform.pyhailort._standin_chip import Tokenizer
    finally:
        sys.path.remove(str(STANDINS))
    return Tokenizer((out / "resources" / "tokenizer.json").read_bytes())


def with_template(out: Path, folder: Path, template: str) -> Path:
    """A copy of the export (links) whose hailo-config.json has another chat_template."""
    folder.mkdir()
    for f in out.iterdir():
        if f.name != "resources":
            (folder / f.name).symlink_to(f)
    (folder / "resources").mkdir()
    for f in (out / "resources").iterdir():
        if f.name != "hailo-config.json":
            (folder / "resources" / f.name).symlink_to(f)
    config = json.loads((out / "resources" / "hailo-config.json").read_text())
    config["chat_template"] = template
    (folder / "resources" / "hailo-config.json").write_text(json.dumps(config))
    return folder


def test_prompt_goes_through_the_chat_template_by_default(gemma, tmp_path):
    log = tmp_path / "prompts.jsonl"
    r = run_script(gemma, "--prompt", "the fox", "--max-tokens", "3", "--json", HAILO_STANDIN_PROMPT_LOG=str(log))
    assert r.returncode == 0, r.stderr + r.stdout
    rep = json.loads(r.stdout)
    # gemma3-tiny's template, its bos_token made literal by export, rendered with add_generation_prompt
    expected = "<bos><start_of_turn>user\nthe fox<end_of_turn>\n<start_of_turn>model\n"
    assert rep["prompt"] == {"text": "the fox", "format": "chat template", "rendered": expected}
    assert rep["generation"]["rendered_prompt"] == expected
    # genai (the stand-in) was given the message and rendered the same text itself
    assert [json.loads(line) for line in log.read_text().splitlines()] == [{"messages": True, "text": expected}]
    tokens = rep["agreement"]["tokens"]
    n = rep["agreement"]["prompt_tokens"]
    assert tokens[:2] == [special_id(gemma, "<bos>"), special_id(gemma, "<start_of_turn>")]
    assert rep["generation"]["prompt_tokens"] == n
    # (a) generated from the prompt (b) compared: its greedy text is (b)'s continuation
    dec = decoder(gemma)
    k = rep["generation"]["generated_tokens"]
    assert k >= 1 and rep["generation"]["text"] == "".join(dec.decode(t) for t in tokens[n:n + k])
    assert rep["summary"]["ok"]

    raw_log = tmp_path / "raw.jsonl"
    raw = run_script(gemma, "--prompt", "the fox", "--max-tokens", "3", "--json", "--raw",
                     HAILO_STANDIN_PROMPT_LOG=str(raw_log))
    assert raw.returncode == 0, raw.stderr + raw.stdout
    raw_rep = json.loads(raw.stdout)
    assert raw_rep["prompt"] == {"text": "the fox", "format": "raw", "rendered": "the fox"}
    assert json.loads(raw_log.read_text()) == {"messages": False, "text": "the fox"}
    raw_tokens = raw_rep["agreement"]["tokens"][:raw_rep["agreement"]["prompt_tokens"]]
    assert raw_tokens and special_id(gemma, "<bos>") not in raw_tokens  # a prompt no chat user sends


def test_skip_generate_renders_the_same_prompt(gemma):
    r = run_script(gemma, "--prompt", "the fox", "--max-tokens", "1", "--json", "--skip-generate")
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert "generation" not in rep and rep["prompt"]["rendered"].startswith("<bos><start_of_turn>user\nthe fox")
    assert rep["agreement"]["tokens"][0] == special_id(gemma, "<bos>")


def test_a_template_refusing_the_message_is_bad_input(gemma, tmp_path):
    """The template loads (hailort's probe passes) but raises on a user
    message: genai would refuse the prompt, so the check stops (exit 3)
    naming the template's message; --raw still runs."""
    refusing = with_template(gemma, tmp_path / "refusing",
                             "{% for m in messages %}{% if m['role'] == 'user' %}{{ raise_exception('users are not "
                             "served here') }}{% endif %}{{ m['content'] }}{% endfor %}")
    r = run_script(refusing, "--prompt", "the fox", "--max-tokens", "1")
    assert r.returncode == 3, r.stderr + r.stdout
    assert "the chat template raised an exception: users are not served here" in r.stderr
    assert run_script(refusing, "--prompt", "the fox", "--max-tokens", "1", "--raw").returncode == 0


def test_text_report_shows_the_rendered_prompt(gemma):
    r = run_script(gemma, "--prompt", "the fox", "--max-tokens", "1")
    assert r.returncode == 0, r.stderr
    assert "chat template prompt of" in r.stdout
    assert 'prompt as the model sees it: "<bos><start_of_turn>user\\nthe fox<end_of_turn>' in r.stdout
    assert "  reply: " in r.stdout


# The stand-in itself enforces what the real API does (so the script cannot pass by accident).

@pytest.fixture()
def standin(monkeypatch):
    monkeypatch.syspath_prepend(str(STANDINS))
    for name in [m for m in sys.modules if m.startswith("hailo_platform")]:
        monkeypatch.delitem(sys.modules, name)
    import hailo_platform
    from hailo_platform.pyhailort import pyhailort
    assert getattr(hailo_platform, "STANDIN", False)
    return pyhailort


def test_standin_strictness(standin, exported):
    hef = str(exported / "model.hef")
    scope = json.loads((exported / "manifest.json").read_text())["dfc"]["scope"]
    with standin.VDevice() as vd:
        with pytest.raises(standin.HailoRTNotFoundException):
            vd.create_infer_model(hef, scope)  # the base scope is not a network group of the HEF
        with pytest.raises(standin.HailoRTException):
            vd.create_infer_model(hef)  # two groups: a name is needed
        model = vd.create_infer_model(hef, scope + "__tbt")
        assert len(model.input_names) == 6
        model._set_enable_kv_cache(True)
        cfg = model.configure()
        with pytest.raises(standin.HailoRTException):
            model.input(model.input_names[2]).set_format_type(standin.FormatType.FLOAT32)  # after configure
        b = cfg.create_bindings()
        for name in model.input_names:
            s = model.input(name)
            b.input(name).set_buffer(np.zeros(s.shape, {1: np.uint8, 2: np.uint16, 3: np.float32}[int(s.format.type)]))
        for name in model.output_names:
            b.output(name).set_buffer(np.zeros(model.output(name).shape, np.uint8))
        cfg._update_cache_offset(1)
        with pytest.raises(standin.StandInLimitation, match="FLOAT32"):
            cfg.run([b], 1000)  # pe inputs left quantized: not what the genai server feeds
        with pytest.raises(standin.HailoRTException, match="C_CONTIGUOUS"):
            b.input(model.input_names[0]).set_buffer(np.zeros((4, 4), np.uint16)[:, ::2])
        b.input(model.input_names[0]).set_buffer(np.zeros(3, np.uint16))
        with pytest.raises(standin.HailoRTException, match="frame size"):
            cfg.run([b], 1000)
    with standin.VDevice() as vd:
        first = standin.LLM(vd, hef)
        with pytest.raises(standin.HailoRTException, match="KV-Cache is already in use"):
            standin.LLM(vd, hef)
        first.release()
        standin.LLM(vd, hef).release()
    params = standin.VDevice.create_params()
    params.scheduling_algorithm = standin.HailoSchedulingAlgorithm.NONE
    with standin.VDevice(params) as vd:
        with pytest.raises(standin.HailoRTException, match="scheduler"):
            standin.LLM(vd, hef)


def test_standin_renders_messages_as_hailort(standin, gemma, tmp_path, monkeypatch):
    """minja_wrapper.cpp: the first prompt of a context is rendered whole; a
    later one is rendered after the TMP probe message and the probe's text is
    cut from its front (so no second BOS); a system message is refused after
    the first prompt; clear_context starts over; LLM creation renders the
    probe, and a template that raises on it fails the creation."""
    hef = str(gemma / "model.hef")
    log = tmp_path / "prompts.jsonl"
    monkeypatch.setenv("HAILO_STANDIN_PROMPT_LOG", str(log))
    config = json.loads((gemma / "resources" / "hailo-config.json").read_text())
    with standin.VDevice() as vd:
        with standin.LLM(vd, hef) as llm:
            assert llm.prompt_template() == config["chat_template"]
            llm.generate([{"role": "user", "content": "hi"}], max_generated_tokens=1).read_all()
            llm.generate([{"role": "user", "content": "more"}], max_generated_tokens=1).read_all()
            with pytest.raises(standin.HailoRTException,
                               match="System role messages can only be provided on the first"):
                llm.generate([{"role": "system", "content": "s"}, {"role": "user", "content": "x"}])
            llm.clear_context()
            llm.generate([{"role": "user", "content": "again"}], max_generated_tokens=1).read_all()
            with pytest.raises(standin.HailoRTException, match="prompt must be a list of dicts"):
                llm.generate(["hi"])
    texts = [json.loads(line)["text"] for line in log.read_text().splitlines()]
    assert texts == ["<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
                     "<start_of_turn>user\nmore<end_of_turn>\n<start_of_turn>model\n",
                     "<bos><start_of_turn>user\nagain<end_of_turn>\n<start_of_turn>model\n"]

    strict = with_template(gemma, tmp_path / "strict",
                           "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversation roles must "
                           "alternate user/assistant/user/assistant/...') }}{% endif %}" + config["chat_template"])
    monkeypatch.setenv("HAILO_STANDIN_EXPORT", str(strict))
    with standin.VDevice() as vd:
        with pytest.raises(standin.HailoRTException, match="Failed to create LLM.*roles must alternate"):
            standin.LLM(vd, hef)
