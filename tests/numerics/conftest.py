"""Shared fixtures and helpers for the GPT-2 and Llama-family numerics tests
(the checks both families run are in numerics_checks.py).

The tests drive the llm2hef binary (env LLM2HEF_BIN, default build/llm2hef):

    llm2hef export FIXTURE -o OUT --cache N --prefill P [--gelu sigmoid|tanh]
    llm2hef inputs OUT --tokens 5,17,3 -o inputs.npz

and judge the exported ONNX with onnxruntime against the Hugging Face
references committed under tests/fixtures/ (see tools/fixtures/).
No torch or transformers here.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_NAMES = ["gpt2-tiny", "gpt2-openai-layout", "gpt2-sharded-bf16"]
INPUT_NAMES = ["inputs_embeds", "attention_mask", "pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin"]
GELUS = ["tanh", "default"]  # "default" passes no --gelu flag (the default is sigmoid)
EXPORT_TIMEOUT_S = 600
INPUTS_TIMEOUT_S = 120


# --------------------------------------------------------------------------- fixture metadata
def fixture_info(name: str) -> dict:
    return json.loads((FIXTURES / name / "fixture.json").read_text())


def cache_sizes(name: str) -> list[int]:
    """The fixture's n_positions and a smaller cache that is also a reference length."""
    n_pos = fixture_info(name)["config"]["n_positions"]
    return [n_pos, 32 if n_pos <= 64 else 48]


def prefill_for(cache: int) -> int:
    return cache // 4


def reference(name: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    with np.load(FIXTURES / name / "reference.npz") as z:
        lengths = sorted(int(k.split("_")[1]) for k in z.files if k.startswith("tokens_"))
        return {L: (z[f"tokens_{L}"], z[f"logits_{L}"]) for L in lengths}


def combos(gelus=GELUS):
    """(fixture, cache, gelu) for every export the suite makes."""
    return [(f, c, g) for f in FIXTURE_NAMES for c in cache_sizes(f) for g in gelus]


def combo_id(c) -> str:
    return f"{c[0]}-c{c[1]}-{c[2]}"


# --------------------------------------------------------------------------- safetensors reader
_ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8)}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of one .safetensors file, as float32 (F16/BF16 upcast exactly)."""
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        raise ValueError(f"{path}: header length {n} exceeds file size {len(data)}")
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype, shape = meta["dtype"], list(meta["shape"])
        if dtype not in _ST_DTYPES:
            raise ValueError(f"{path}: {name}: unsupported dtype {dtype}")
        np_dt, size = _ST_DTYPES[dtype]
        begin, end = meta["data_offsets"]
        count = int(np.prod(shape, dtype=np.int64))
        if not (0 <= begin <= end <= len(body)) or end - begin != count * size:
            raise ValueError(f"{path}: {name}: bad data_offsets {begin}..{end} for {dtype}{shape}")
        raw = np.frombuffer(body[begin:end], dtype=np_dt)
        if dtype == "BF16":
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw.astype(np.float32)
        out[name] = arr.reshape(shape)
    return out


def load_checkpoint(folder: Path) -> dict[str, np.ndarray]:
    """All tensors of a HF checkpoint folder (single file or sharded), float32,
    names without the optional `transformer.` prefix."""
    folder = Path(folder)
    index = folder / "model.safetensors.index.json"
    if index.exists():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for f in files:
        for k, v in read_safetensors(folder / f).items():
            k = k.removeprefix("transformer.")
            assert k not in tensors, f"{k} appears twice"
            tensors[k] = v
    return tensors


# --------------------------------------------------------------------------- the binary
def llm2hef_bin() -> Path:
    return Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))


def _missing_bin(exe: Path) -> str:
    return f"llm2hef binary not found at {exe} (build it, or set LLM2HEF_BIN)"


def _failed(cmd: list[str], proc: subprocess.CompletedProcess) -> str:
    return (f"`{' '.join(cmd)}` exited {proc.returncode}\n"
            f"--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")


def run_llm2hef(args, timeout=EXPORT_TIMEOUT_S, check=True) -> subprocess.CompletedProcess:
    exe = llm2hef_bin()
    if not exe.exists():
        pytest.fail(_missing_bin(exe))
    cmd = [str(exe)] + [str(a) for a in args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(_failed(cmd, proc))
    return proc


@dataclass
class Export:
    fixture: str
    cache: int
    prefill: int
    gelu: str
    out: Path
    _sessions: dict = field(default_factory=dict)
    _inputs: dict = field(default_factory=dict)
    _inputs_calls: int = 0

    @property
    def manifest(self) -> dict:
        return json.loads((self.out / "manifest.json").read_text())

    def inputs(self, tokens, workdir: Path | None = None) -> dict[str, np.ndarray]:
        """`llm2hef inputs` for this export: the runtime-equivalent feeds
        (memoized per token sequence; callers get their own copies)."""
        key = tuple(int(t) for t in tokens)
        if key not in self._inputs:
            self._inputs_calls += 1
            dst = self.out.parent / f"inputs-{self._inputs_calls}.npz"
            run_llm2hef(["inputs", self.out, "--tokens", ",".join(map(str, key)), "-o", dst],
                        timeout=INPUTS_TIMEOUT_S)
            with np.load(dst) as z:
                self._inputs[key] = {k: z[k] for k in z.files}
        return {k: v.copy() for k, v in self._inputs[key].items()}

    def session(self, which: str = "model"):
        import onnxruntime as ort
        if which not in self._sessions:
            path = self.out / "model.onnx" if which == "model" else self.hidden_model_path()
            so = ort.SessionOptions()
            so.log_severity_level = 3
            self._sessions[which] = ort.InferenceSession(str(path), so,
                                                         providers=["CPUExecutionProvider"])
        return self._sessions[which]

    def run(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        sess = self.session("model")
        return sess.run(["logits"], {k: feeds[k] for k in INPUT_NAMES})[0]

    def hidden_model_path(self) -> Path:
        path = self.out / "model_with_hidden.onnx"
        if not path.exists():
            make_hidden_model(self.out / "model.onnx", path)
        return path

    def run_hidden(self, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(final-norm hidden states [N, H], logits [V]) for one feed."""
        sess = self.session("hidden")
        name = sess.get_outputs()[1].name
        logits, hidden = sess.run(["logits", name], {k: feeds[k] for k in INPUT_NAMES})
        return hidden[0], logits[0, 0]


def find_final_hidden(model) -> str:
    """The tensor that is the data input of the Slice whose output feeds the
    lm_head MatMul producing `logits` (found by structure, not by name)."""
    producer = {o: n for n in model.graph.node for o in n.output}
    consumers: dict[str, list] = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    todo, seen = ["logits"], set()
    while todo:
        t = todo.pop(0)
        node = producer.get(t)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.op_type == "Slice" and any(c.op_type == "MatMul" for c in consumers.get(node.output[0], [])):
            return node.input[0]
        todo.extend(node.input)
    raise AssertionError("no Slice feeding a MatMul found upstream of `logits`")


def make_hidden_model(src: Path, dst: Path) -> str:
    """Copy of the model with the final-norm hidden states as a second output,
    saved next to the original so that the external data path still resolves."""
    import onnx
    m = onnx.load(str(src), load_external_data=False)
    name = find_final_hidden(m)
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    m.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, dims))
    onnx.save(m, str(dst))
    return name


class _ExportCache:
    def __init__(self, tmp_factory):
        self.tmp_factory = tmp_factory
        self.done: dict[tuple, Export | str] = {}

    def get(self, fixture: str, cache: int, gelu: str) -> Export:
        key = (fixture, cache, gelu)
        if key not in self.done:
            out = self.tmp_factory.mktemp(f"export-{combo_id(key)}") / "out"
            args = ["export", FIXTURES / fixture, "-o", out, "--cache", cache,
                    "--prefill", prefill_for(cache)]
            if gelu != "default":
                args += ["--gelu", gelu]
            exe = llm2hef_bin()
            if not exe.exists():
                self.done[key] = _missing_bin(exe)
            else:
                cmd = [str(exe)] + [str(a) for a in args]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
                if proc.returncode != 0:
                    self.done[key] = _failed(cmd, proc)
                else:
                    self.done[key] = Export(fixture, cache, prefill_for(cache), gelu, out)
        got = self.done[key]
        if isinstance(got, str):
            pytest.fail(got)  # the same failure for every test using this export
        return got


@pytest.fixture(scope="session")
def exports(tmp_path_factory) -> _ExportCache:
    return _ExportCache(tmp_path_factory)


@pytest.fixture(scope="session")
def checkpoints():
    cache = {}

    def get(name: str) -> dict[str, np.ndarray]:
        if name not in cache:
            cache[name] = load_checkpoint(FIXTURES / name)
        return cache[name]
    return get


# --------------------------------------------------------------------------- reporting
_REPORT: list[dict] = []


@pytest.fixture
def report():
    """Tests append measured figures here; they are printed at the end of the run."""
    return _REPORT


def _logit_section(tr, title: str, rows: list[dict], cols: list[tuple[str, str]], lens_w: int) -> None:
    """One line per export: `cols` ((report key, format spec) naming the export),
    then the lengths run and the worst figures over them."""
    if not rows:
        return
    tr.section(title)
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k, _ in cols), []).append(r)
    tr.write_line(" ".join(f"{k:{w}}" for k, w in cols) + f" {'lengths':<{lens_w}} "
                  f"{'max|diff|':>10} {'min cos':>11} {'argmax':>7} {'result':>6}")
    for key, rs in sorted(groups.items()):
        lens = ",".join(str(r["length"]) for r in sorted(rs, key=lambda r: r["length"]))
        worst = max(r["max_abs"] for r in rs)
        cos = min(r["cosine"] for r in rs)
        am = sum(r["argmax_ok"] for r in rs)
        ok = "ok" if all(r["passed"] for r in rs) else "FAIL"
        tr.write_line(" ".join(f"{v:{w}}" for v, (_, w) in zip(key, cols)) + f" {lens:<{lens_w}} "
                      f"{worst:>10.3e} {cos:>11.8f} {am:>3}/{len(rs):<3} {ok:>6}")


def _consistency_section(tr, title: str, rows: list[dict], fixture_w: int, gelu: bool) -> None:
    if not rows:
        return
    tr.section(title)
    for r in rows:
        moved = "" if r["moved"] != r["moved"] else f"  (perturbed rows moved by {r['moved']:.3e})"
        g = f"{r['gelu']:<8} " if gelu else ""
        tr.write_line(f"{r['fixture']:<{fixture_w}} c{r['cache']:<4} {g}{r['check']:<28} "
                      f"max|diff| {r['max_abs']:.3e}{moved}")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    kind = lambda k: [r for r in _REPORT if r.get("kind") == k]  # noqa: E731
    _logit_section(tr, "GPT-2 logit match (onnxruntime vs Hugging Face, last position)", kind("logits"),
                   [("fixture", "<20"), ("cache", ">5"), ("gelu", "<8")], 32)
    _consistency_section(tr, "GPT-2 cache consistency (max |diff| of the hidden rows that must not move)",
                         kind("consistency"), 20, gelu=True)
    _logit_section(tr, "Llama family logit match (onnxruntime vs Hugging Face, last position)",
                   kind("llama_logits"), [("fixture", "<18"), ("cache", ">5")], 34)
    _consistency_section(tr, "Llama family cache consistency "
                         "(max |diff| of the hidden rows that must not move)",
                         kind("llama_consistency"), 18, gelu=False)
    _logit_section(tr, "LFM2 logit match (onnxruntime vs Hugging Face, last position)",
                   kind("lfm2_logits"), [("fixture", "<18"), ("cache", ">5")], 34)
    _consistency_section(tr, "LFM2 cache consistency (max |diff| of the hidden rows that must not move)",
                         kind("lfm2_consistency"), 18, gelu=False)
    mistral_granite_opt_terminal_summary(tr)
    _logit_section(tr, "Gemma 2/3 and OLMo 2 logit match (onnxruntime vs Hugging Face, last position)",
                   kind("post_norm_logits"), [("fixture", "<18"), ("cache", ">5")], 34)
    _consistency_section(tr, "Gemma 2/3 and OLMo 2 cache consistency "
                         "(max |diff| of the hidden rows that must not move)",
                         kind("post_norm_consistency"), 18, gelu=False)
    _logit_section(tr, "SmolLM2-135M-Instruct Q4_1 GGUF, a real model (onnxruntime vs transformers, last position)",
                   kind("smollm2_logits"), [("fixture", "<10"), ("cache", ">5")], 8)
    path = os.environ.get("LLM2HEF_NUMERICS_REPORT")
    if path and _REPORT:
        Path(path).write_text(json.dumps(_REPORT, indent=1) + "\n")


# =========================================================================== Llama family
# Qwen2 / Llama / SmolLM3 / Qwen3 fixtures (tools/fixtures/make_llama_family_fixtures.py).
# Exports go through the same _ExportCache, with gelu "default" (no --gelu flag).
LLAMA_FAMILY = ["qwen2-tiny", "llama3-tiny", "smollm3-tiny", "smollm3-interval", "qwen3-tiny",
                "llama-bigvocab",
                # Written by transformers 5 (tools/fixtures/make_transformers5_fixtures.py).
                "llama3-tf5", "qwen2-tf5"]
LLAMA_CACHES = [64, 32]
# One fixture per adapter for the (slower) cache-consistency checks.
LLAMA_CONSISTENCY = ["qwen2-tiny", "llama3-tiny", "smollm3-tiny", "qwen3-tiny"]
LLAMA_GELU = "default"


def llama_combos(names=None):
    """(fixture, cache, "default") for every Llama-family export the suite makes."""
    return [(f, c, LLAMA_GELU) for f in (names or LLAMA_FAMILY) for c in LLAMA_CACHES]


def llama_combo_id(c) -> str:
    return f"{c[0]}-c{c[1]}"


def llama_generation_config(name: str) -> dict:
    return json.loads((FIXTURES / name / "generation_config.json").read_text())


class ConsistencyCtx:
    """Shared state for the cache-consistency checks (numerics_checks.py) of both
    families: random tokens from `vocab` (default: the embeddings' rows), their
    full-prompt feeds, and row perturbations."""

    def __init__(self, ex, tmp_path, seed_base: int = 1000, vocab: int | None = None):
        self.ex = ex
        self.tmp = tmp_path
        self.N = ex.cache
        self.emb = np.load(ex.out / "resources" / "embeddings.npy")
        self.V = self.emb.shape[0] if vocab is None else vocab
        self.rng = np.random.default_rng(seed_base + self.N)
        self.tokens = self.rng.integers(0, self.V, size=self.N)
        # A full prompt puts position p on row p: the runtime's pe rows per position.
        self.full = ex.inputs(self.tokens, tmp_path)

    def feeds(self, n):
        if n == self.N:
            return {k: v.copy() for k, v in self.full.items()}
        return self.ex.inputs(self.tokens[:n], self.tmp)

    def randomize_rows(self, f, rows, pe_mode="positions"):
        """New embeddings and pe rows for `rows` (the mask is left as it is)."""
        f = {k: v.copy() for k, v in f.items()}
        rows = np.asarray(rows)
        f["inputs_embeds"][0, rows] = self.emb[self.rng.integers(0, self.V, size=rows.size)]
        if pe_mode == "positions":  # rows of other, valid positions
            pos = self.rng.integers(0, self.N, size=rows.size)
            for k in INPUT_NAMES[2:]:
                f[k][0, rows] = self.full[k][0, pos]
        else:  # arbitrary values in [-1, 1]
            for k in INPUT_NAMES[2:]:
                f[k][0, rows] = self.rng.uniform(-1, 1, size=f[k][0, rows].shape).astype(np.float32)
        return f

    def hidden(self, f):
        return self.ex.run_hidden(f)


# =========================================================================== LFM2
# Tiny Lfm2ForCausalLM fixtures (tools/fixtures/make_lfm2_fixtures.py), both layer
# kinds, conv_bias off and on, GQA 2 and 3, kernel 3 and 4. Exported like the Llama family (no flag).
LFM2 = ["lfm2-tiny", "lfm2-bias", "lfm2-kernel4"]
LFM2_CACHES = [64, 32]


def lfm2_combos(names=None):
    """(fixture, cache, "default") for every LFM2 export the suite makes; a cache
    above the fixture's max_position_embeddings is skipped (lfm2-bias has 64)."""
    return [(f, c, LLAMA_GELU) for f in (names or LFM2) for c in LFM2_CACHES
            if c <= fixture_info(f)["config"]["max_position_embeddings"]]


# =========================================================================== Mistral, Granite, OPT
# Fixtures of tools/fixtures/make_mistral_granite_opt_fixtures.py, exported like the Llama
# family (no flag). mistral-window has sliding_window 64: exact at both caches,
# refused above (tests/cli/export/test_mistral_granite_opt_refusals.py).
MISTRAL_GRANITE_OPT_CACHES = {"mistral-tiny": [64, 32], "mistral-window": [64, 32], "granite-tiny": [64, 32],
                    "opt-tiny": [64, 32], "opt-postln": [64, 32], "opt-plain": [64, 32]}
OPT_FIXTURES = ["opt-tiny", "opt-postln", "opt-plain"]


def mistral_granite_opt_combos(names=None):
    """(fixture, cache, "default") for every Mistral / Granite / OPT export the suite makes."""
    return [(f, c, LLAMA_GELU) for f in (names or MISTRAL_GRANITE_OPT_CACHES) for c in MISTRAL_GRANITE_OPT_CACHES[f]]


def mistral_granite_opt_terminal_summary(tr) -> None:
    rows = [r for r in _REPORT if r.get("kind") == "mistral_granite_opt_logits"]
    _logit_section(tr, "Mistral / Granite / OPT logit match (onnxruntime vs Hugging Face, last position)",
                   rows, [("fixture", "<18"), ("cache", ">5")], 34)
    _consistency_section(tr, "Mistral / Granite / OPT cache consistency "
                         "(max |diff| of the hidden rows that must not move)",
                         [r for r in _REPORT if r.get("kind") == "mistral_granite_opt_consistency"], 18, gelu=False)
# =========================================================================== Gemma 2/3, OLMo 2
# tools/fixtures/make_post_norm_fixtures.py. Each fixture lists the caches its
# export is exact at (at most its sliding_window); the others are refused
# (tests/cli/export/test_post_norm_refusals.py). Exported like the Llama family (no flag).
POST_NORM = ["gemma3-tiny", "gemma3-window", "gemma2-tiny", "olmo2-tiny"]


def post_norm_combos(names=None):
    """(fixture, cache, "default") for every exact Gemma/OLMo 2 export the suite makes."""
    return [(f, c, LLAMA_GELU) for f in (names or POST_NORM) for c in fixture_info(f)["exact_caches"]]
# =========================================================================== Phi-3 / Phi / StableLM / GPT-NeoX
# Fixtures of tools/fixtures/make_phi_family_fixtures.py. Phi exports run with
# `--gelu tanh` (gelu_new exactly); the default sigmoid form is measured apart.
PHI_FAMILY = ["neox-parallel", "neox-sequential", "phi2-tiny", "phi-qkln", "stablelm-tiny", "stablelm-qkln",
              "stablelm-parallel", "phi3-longrope", "phi4mini-tiny"]
PHI_CACHES = [64, 32]
# One fixture per adapter and switch that changes the layer skeleton, for the consistency checks.
PHI_CONSISTENCY = ["neox-parallel", "neox-sequential", "phi2-tiny", "stablelm-parallel", "phi4mini-tiny"]


def phi_gelu(name: str) -> str:
    """The exact GELU flag for Phi fixtures ("tanh"), no flag for the others."""
    return "tanh" if fixture_info(name)["architecture"] == "PhiForCausalLM" else "default"


def phi_combos(names=None, caches=None):
    """(fixture, cache, gelu) for every export of these fixtures; caches above
    max_position_embeddings are skipped."""
    return [(f, c, phi_gelu(f)) for f in (names or PHI_FAMILY) for c in (caches or PHI_CACHES)
            if c <= fixture_info(f)["config"]["max_position_embeddings"]]
