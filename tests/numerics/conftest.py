"""Shared fixtures and helpers for the numerics tests (the checks themselves are
in numerics_checks.py). Which exports they make comes from the family table
(tests/family_table.py): one row per adapter, its fixtures, and its `numerics`
column (options, caches, which fixtures the slower checks run on).

The tests drive the llm2hef binary (env LLM2HEF_BIN, default build/llm2hef):

    llm2hef export FIXTURE -o OUT --cache N --prefill P [--gelu tanh | --sliding-window band]
    llm2hef inputs OUT --tokens 5,17,3 -o inputs.npz

and judge the exported ONNX with onnxruntime against the Hugging Face
references committed under tests/fixtures/ (see tools/fixtures/).
No torch or transformers here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from family_table import BY_ADAPTER, BY_FIXTURE, FAMILIES, Family  # noqa: E402, F401

FIXTURES = REPO / "tests" / "fixtures"
INPUT_NAMES = ["inputs_embeds", "attention_mask", "pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin"]
DEFAULT = "default"  # the export option that passes no flag
CACHES = (64, 32)  # a fixture's caches, unless the table or its fixture.json says otherwise
EXPORT_TIMEOUT_S = 600
INPUTS_TIMEOUT_S = 120


# --------------------------------------------------------------------------- fixture metadata
def fixture_info(name: str) -> dict:
    return json.loads((FIXTURES / name / "fixture.json").read_text())


def reference(name: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    with np.load(FIXTURES / name / "reference.npz") as z:
        lengths = sorted(int(k.split("_")[1]) for k in z.files if k.startswith("tokens_"))
        return {L: (z[f"tokens_{L}"], z[f"logits_{L}"]) for L in lengths}


def config_dims(fixture: str) -> dict[str, int]:
    """The dimensions the export must report, from fixture.json's config in
    whichever spelling the family's config uses (GPT-2's n_embd, OPT's
    word_embed_proj_dim for the runtime's rows, LFM2's ffn_width, ...)."""
    cfg = fixture_info(fixture)["config"]
    heads = cfg.get("num_attention_heads", cfg.get("n_head"))
    hidden = cfg.get("hidden_size", cfg.get("n_embd"))
    # GPT-2's n_inner null means 4 * n_embd.
    intermediate = next((cfg[k] for k in ("intermediate_size", "ffn_width", "ffn_dim", "n_inner")
                         if cfg.get(k) is not None), 4 * hidden)
    return {"hidden": cfg.get("word_embed_proj_dim", hidden),
            "layers": cfg.get("num_hidden_layers", cfg.get("n_layer")),
            "vocab": cfg["vocab_size"], "heads": heads, "kv_heads": cfg.get("num_key_value_heads", heads),
            "head_dim": cfg.get("head_dim", hidden // heads), "intermediate": intermediate}


def prefill_for(cache: int) -> int:
    return cache // 4


def export_caches(fixture: str) -> list[int]:
    """The caches a fixture is exported at, largest first: the table's, else the
    ones its fixture.json proves exact, else 64 and 32 within its positions."""
    fam = BY_FIXTURE[fixture]
    if fixture in fam.numerics.caches:
        return list(fam.numerics.caches[fixture])
    info = fixture_info(fixture)
    if "exact_caches" in info:
        return list(info["exact_caches"])
    cfg = info["config"]
    limit = cfg.get("n_positions") or cfg["max_position_embeddings"]
    return [c for c in CACHES if c <= limit]


# --------------------------------------------------------------------------- the runs, from the family table
class Run(NamedTuple):
    """One export: a fixture at a cache, with an option (DEFAULT or a choice of
    one of the family's adapter options)."""
    fixture: str
    cache: int
    option: str

    @property
    def family(self) -> Family:
        return BY_FIXTURE[self.fixture]

    @property
    def id(self) -> str:
        """family-fixture-cache[-option]; the option is named where the family has several."""
        fam = self.family
        named = self.option != DEFAULT or len(fam.numerics.options) > 1
        return f"{fam.adapter}-{self.fixture}-c{self.cache}" + (f"-{self.option}" if named else "")

    @property
    def exact(self) -> bool:
        return self.option not in self.family.numerics.approximate

    def flags(self) -> list[str]:
        if self.option == DEFAULT:
            return []
        names = [n for n, choices in self.family.options.items() if self.option in choices]
        assert len(names) == 1, f"{self.id}: option {self.option!r} is not one choice of {self.family.options}"
        return [f"--{names[0]}", self.option]


def _runs(fixtures, caches_of, options) -> list[Run]:
    return [Run(f, c, o) for f in fixtures for c in caches_of(f) for o in options]


def logit_runs() -> list[Run]:
    """Every export the logit match judges: each fixture at each of its caches
    with each option, and the table's extra runs."""
    out = []
    for fam in FAMILIES:
        out += _runs(fam.fixtures, export_caches, fam.numerics.options)
        out += [Run(*x) for x in fam.numerics.extra]
    return out


def _within(caches: tuple[int, ...]):
    return lambda f: [c for c in export_caches(f) if not caches or c in caches]


def contract_runs() -> list[Run]:
    out = []
    for fam in FAMILIES:
        out += _runs(fam.fixtures, _within(fam.numerics.contract_caches), fam.numerics.options)
    return out


def consistency_runs() -> list[Run]:
    out = []
    for fam in FAMILIES:
        n = fam.numerics
        out += _runs(n.consistency or (fam.fixture,), _within(n.consistency_caches), n.options)
    return out


def params(runs) -> list:
    return [pytest.param(r, id=r.id) for r in runs]


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
    option: str
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


def load_graph(ex):
    """The export's graph, without its weights."""
    import onnx
    return onnx.load(str(ex.out / "model.onnx"), load_external_data=False)


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
    """Each export made once per session, shared by every test file."""

    def __init__(self, tmp_factory):
        self.tmp_factory = tmp_factory
        self.done: dict[Run, Export | str] = {}

    def get(self, fixture: str, cache: int, option: str = DEFAULT) -> Export:
        key = Run(fixture, cache, option)
        if key not in self.done:
            out = self.tmp_factory.mktemp(f"export-{key.id}") / "out"
            args = ["export", FIXTURES / fixture, "-o", out, "--cache", cache,
                    "--prefill", prefill_for(cache)] + key.flags()
            exe = llm2hef_bin()
            if not exe.exists():
                self.done[key] = _missing_bin(exe)
            else:
                cmd = [str(exe)] + [str(a) for a in args]
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S)
                if proc.returncode != 0:
                    self.done[key] = _failed(cmd, proc)
                else:
                    self.done[key] = Export(fixture, cache, prefill_for(cache), option, out)
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


def _consistency_section(tr, title: str, rows: list[dict]) -> None:
    if not rows:
        return
    tr.section(title)
    for r in rows:
        moved = "" if r["moved"] != r["moved"] else f"  (perturbed rows moved by {r['moved']:.3e})"
        tr.write_line(f"{r['family']:<9} {r['fixture']:<20} c{r['cache']:<4} {r['option']:<8} {r['check']:<28} "
                      f"max|diff| {r['max_abs']:.3e}{moved}")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    tr = terminalreporter
    kind = lambda k: [r for r in _REPORT if r.get("kind") == k]  # noqa: E731
    _logit_section(tr, "Logit match per family (onnxruntime vs Hugging Face, last position)", kind("logits"),
                   [("family", "<9"), ("fixture", "<20"), ("cache", ">5"), ("option", "<8")], 40)
    _consistency_section(tr, "Cache consistency per family (max |diff| of the hidden rows that must not move)",
                         kind("consistency"))
    _logit_section(tr, "SmolLM2-135M-Instruct Q4_1 GGUF, a real model (onnxruntime vs transformers, last position)",
                   kind("smollm2_logits"), [("fixture", "<10"), ("cache", ">5")], 8)
    path = os.environ.get("LLM2HEF_NUMERICS_REPORT")
    if path and _REPORT:
        Path(path).write_text(json.dumps(_REPORT, indent=1) + "\n")


# --------------------------------------------------------------------------- cache consistency
class ConsistencyCtx:
    """Shared state for the cache-consistency checks (numerics_checks.py): random
    tokens from `vocab` (default: the embeddings' rows), their full-prompt
    feeds, and row perturbations."""

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
