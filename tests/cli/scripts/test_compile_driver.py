"""compile.py end to end against a strict stand-in for Hailo's DFC.

The stand-in (written below into a temporary folder as the packages
`hailo_sdk_client`, `hailo_sdk_common`, `hailo_model_optimization` and
`keras`) does no compilation: its save_har writes HARs built by
har_fixtures.py with the manifest's dimensions (a parsed HAR after
translate_onnx_model; after optimize a quantized HN with the base scope next
to `__prefill` and `__tbt`, the same layer names in all three), and it logs
every call. It enforces what is known of the real DFC (hailo-contract.md
sections 3, 6-8):

- the environment: NPY_PROMOTION_STATE=legacy, TRANSFORMERS_NO_TF, and
  CUDA_VISIBLE_DEVICES named when the GPU lines are used;
- the acceleras Keras layers registered before a quantized HAR is loaded or
  a HAR optimized ("Unknown layer" / a _decompose_layer_norm KeyError
  otherwise);
- add_external_resources' `tile` as np.tile takes it: three per-axis factors
  [1, 1, heads];
- calibset_size equal to the calibration samples given, in the DFC layout;
- use_saitama=True, device=cuda on both the calibration and bias-correction
  lines, or on neither;
- the SDK paths patched before `hailo_sdk_client` is imported (LNM
  pipeline/s6_compile_hef.py calls patch_sdk_paths() before
  `from hailo_sdk_client import ClientRunner`; whether the real DFC needs it
  that early is not known, so the stand-in holds to the recipe's order), and
  the compile script naming only the two groups, with a format_conversion for
  every cache layer of both.

Its emulator (issue 26, docs/quantization-gate.md): InferenceContext with
the targets Hailo's model zoo names, infer_context() whose context is
usable only inside its `with`, and infer(ctx, dataset, batch_size), which
refuses quantized emulation of a HAR never optimized, checks the
calibration layout (section 7) and returns one NHWC array per lm_head
shard: model.onnx in fp32 on cos/sin rebuilt from the positions, with
every attention softmax taken across all heads at once as the DFC's
emulation takes it (LNM finding 11, below), made noisy or crashing (LNM's
Cache error) by FAKE_DFC_EMULATION. Every runner has a number, logged with
its calls, so that a test can tell which runner ran what.

optimize refuses weight_group_size lines together with bias_correction on
saitama, with the error LNM found (finding 7, docs/findings/
quantization-recipe.md: `FusedQWGModule` has no attribute `mac` in
`bias_accumulator.py`).

Its compile() returns a HEF written by tools/fixtures/hef_writer.py for the
export, as DFC 5.3.0 (the version LNM compiled with) would label it:
STRICT_RUNTIME_VERSIONING and sdk_version 5.3.0 (FAKE_DFC_SDK changes the
version; FAKE_DFC_HEF=garbage returns bytes that are no HEF). FAKE_DFC_FAIL_SAVE
names a HAR state whose save_har raises, as a full disk would.

To check that this stand-in catches an older driver, point
COMPILE_DRIVER_UNDER_TEST at another compile.py: it replaces the generated one
in every export the tests make.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import pytest

import har_fixtures as hf  # noqa: E402
import hef_writer as hw  # noqa: E402
from llm2hef_cli import BIN, CLI_TESTS, FIXTURES, REPO

FIXTURE = FIXTURES / "gpt2-tiny"

FAKE_DFC = textwrap.dedent('''
    """Stand-in for hailo_sdk_client: writes fixture HARs, logs calls, and
    refuses what the real DFC is known to refuse."""
    import contextlib, enum, io, itertools, json, os, re, sys, tarfile
    import numpy as np
    sys.path.insert(0, os.environ["HAR_FIXTURES_DIR"])
    sys.path.insert(0, os.environ["HEF_WRITER_DIR"])
    import har_fixtures as hf
    import hef_writer as hw
    import keras
    from hailo_model_optimization.acceleras.atomic_ops import ops as acceleras_ops
    from hailo_sdk_common.paths_manager.paths import SDKPaths

    # LNM's order (pipeline/s6_compile_hef.py): patch_sdk_paths(), then
    # `from hailo_sdk_client import ClientRunner`, then the runner.
    _paths = SDKPaths()
    if not (_paths.is_release and os.path.isdir(_paths._build_dir)):
        raise RuntimeError("stand-in DFC: hailo_sdk_client imported before the SDK paths were patched "
                           "(build folder %s)" % _paths._build_dir)

    LOG = os.environ["FAKE_DFC_LOG"]
    MAN = json.load(open(os.environ["FAKE_DFC_MANIFEST"]))
    EXPORT = os.path.dirname(os.environ["FAKE_DFC_MANIFEST"])
    NET = MAN["dfc"]["scope"]
    QUANTIZED_STATES = ("fp_optimized_model", "quantized_model", "compiled_model")
    RUNNERS = itertools.count(1)

    def log(**kw):
        with open(LOG, "a") as f:
            f.write(json.dumps(kw) + "\\n")

    def configure():
        hf.SEQ, hf.HD = MAN["cache_size"], MAN["theta_length"]
        hf.NHEAD, hf.NKV = MAN["pe_tiles"]["q"], MAN["pe_tiles"]["k"]
        hf.HIDDEN = MAN["dims"]["hidden"]

    def check_environment():
        assert os.environ.get("NPY_PROMOTION_STATE") == "legacy", "NPY_PROMOTION_STATE"
        assert os.environ.get("TRANSFORMERS_NO_TF") == "1", "TRANSFORMERS_NO_TF"

    def require_registered(what):
        for cls in acceleras_ops.LAYERS:
            if cls not in keras.saving.REGISTERED:
                if what == "load":
                    raise ValueError("Unknown layer: '%s'" % cls.__name__)
                raise KeyError("_decompose_layer_norm: %s" % cls.__name__)

    def read_members(path):
        with tarfile.open(path) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}

    def write_members(path, members):
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    class InferenceContext(enum.Enum):
        """The emulation targets Hailo's public code names (hailo_model_zoo
        utils/hw_utils.py, core/infer/model_infer.py)."""
        SDK_NATIVE = "native"
        SDK_FP_OPTIMIZED = "fp_optimized"
        SDK_QUANTIZED = "quantized"
        SDK_BIT_EXACT = "bit_exact"
        SDK_HAILO_HW = "hailo_hw"

    class _OpenContext:
        """What runner.infer_context(...) yields; usable only inside its `with`
        (Hailo's tutorials and the model zoo call infer inside it)."""
        def __init__(self, target):
            self.infer_context, self.open = target, True

    def emulator_graph():
        """model.onnx as the DFC's emulation computes it: every attention
        Softmax (on [b, heads, s, S], last axis) taken over all heads at once.
        LNM finding 11 (docs/findings/sdk-native-cosine-drift.md):
        SoftmaxOp.call_hw_sim() never reads its `groups`, and
        BaseAtomicOp._numeric_run() calls it for the contexts LNM tried
        (SDK_NATIVE, SDK_BIT_EXACT). Here every context has it, the
        quantized and full-precision ones included; that those two share
        it is the reading of the issue's review, not something LNM ran."""
        import onnx
        from onnx import helper, numpy_helper
        model = onnx.load(os.path.join(EXPORT, "model.onnx"))
        nodes = []
        for n in model.graph.node:
            if n.op_type != "Softmax":
                nodes.append(n)
                continue
            assert [a.i for a in n.attribute if a.name == "axis"] in ([-1], [3]), n
            x, y, t = n.input[0], n.output[0], n.output[0] + "_all_heads"
            model.graph.initializer.append(numpy_helper.from_array(np.array([1, 3], np.int64), t + "_axes"))
            nodes += [helper.make_node("ReduceMax", [x], [t + "_max"], axes=[1, 3], keepdims=1),
                      helper.make_node("Sub", [x, t + "_max"], [t + "_sub"]),
                      helper.make_node("Exp", [t + "_sub"], [t + "_exp"]),
                      helper.make_node("ReduceSum", [t + "_exp", t + "_axes"], [t + "_sum"], keepdims=1),
                      helper.make_node("Div", [t + "_exp", t + "_sum"], [y])]
        del model.graph.node[:]
        model.graph.node.extend(nodes)
        return model.SerializeToString()

    def emulated_logits(calib):
        """The emulator's logits on the DFC-layout inputs: after
        add_external_resources the DFC turns the raw positions into cos/sin
        itself (hailo-contract.md section 7), so the tables are rebuilt from
        theta here."""
        import onnxruntime
        theta = np.load(os.path.join(EXPORT, "resources", "theta.npy")).astype(np.float32)
        sess = onnxruntime.InferenceSession(emulator_graph(), providers=["CPUExecutionProvider"])
        n = next(iter(calib.values())).shape[0]
        out = []
        for i in range(n):
            feed = {}
            for inp in MAN["inputs"]:
                a = calib[NET + "/" + inp["dfc_layer"]][i]
                if inp["role"].startswith("pe_"):
                    angle = theta[None, :] * a[:, None]
                    a = (np.cos(angle) if inp["role"].endswith("cos") else np.sin(angle)).astype(np.float32)
                feed[inp["name"]] = a.reshape(inp["shape"]).astype(np.float32)
            out.append(np.concatenate([np.asarray(o).ravel() for o in sess.run(None, feed)]))
        return np.stack(out)

    class ClientRunner:
        def __init__(self, hw_arch="hailo10h", har=None):
            check_environment()
            self.har, self.script, self.resources, self.files = har, None, None, set()
            self.members, self.state, self.number = None, "new", next(RUNNERS)
            if har is not None:
                self.members = read_members(har)
                meta = json.loads(self.members[NET + ".metadata.json"])
                if meta["state"] in QUANTIZED_STATES:
                    require_registered("load")
                self.state = meta["state"]
                self.resources = json.loads(self.members.get("standin.json", b"{}")).get("resources")
            log(op="init", har=har, state=self.state, runner=self.number)

        def hn(self):
            return json.loads(self.members[NET + ".hn"])

        def translate_onnx_model(self, path, net, **kw):
            assert os.path.isfile(path) and net == NET
            assert sorted(kw["net_input_shapes"]) == sorted(i["name"] for i in MAN["inputs"])
            assert kw.get("disable_onnx_simplifier") is True
            configure()
            # The parser numbers input_layer1..6 in ONNX input order (hailo-contract.md section 2).
            by_number = sorted(MAN["inputs"], key=lambda i: int(i["dfc_layer"][len("input_layer"):]))
            pe_order = tuple(i["role"] for i in by_number if i["role"].startswith("pe_"))
            hn, w = hf.parsed_har(vocab=MAN["dims"]["vocab"], layers=1, net=net, pe_order=pe_order)
            self.members = {NET + ".hn": json.dumps(hn).encode(), NET + ".npz": hf.npz_bytes(w)}
            self.state = "hailo_model"
            log(op="translate")

        def save_har(self, path):
            if os.environ.get("FAKE_DFC_FAIL_SAVE") == self.state:
                log(op="save_har_failed", path=path, state=self.state)
                raise OSError(28, "No space left on device", path)
            members = dict(self.members)
            members[NET + ".metadata.json"] = json.dumps({"state": self.state, "sdk_version": "5.3.0"}).encode()
            members["standin.json"] = json.dumps({"resources": self.resources}).encode()
            write_members(path, members)
            log(op="save_har", path=path, state=self.state)

        def add_external_resources(self, res):
            mapping, weights = res["input_layers_mapping"], res["weights"]
            roles = {i["dfc_layer"]: i["role"] for i in MAN["inputs"]}
            want = {NET + "/" + l: ("embedding" if r == "embeddings" else r[-3:])
                    for l, r in roles.items() if r != "attention_mask"}
            assert mapping == want, (mapping, want)
            for layer, kind in mapping.items():
                w = weights[layer]
                if kind == "embedding":
                    assert w["embed"].shape == (MAN["dims"]["vocab"], MAN["dims"]["hidden"])
                    continue
                heads = MAN["pe_tiles"]["q" if "_q_" in roles[layer.split("/")[1]] else "k"]
                theta = np.asarray(w["theta"])
                assert theta.shape == (MAN["theta_length"],)
                # `tile` is a per-axis factor list, used the way np.tile uses it.
                tile = np.asarray(w["tile"])
                assert tile.ndim == 1 and tile.size == 3 and np.issubdtype(tile.dtype, np.integer), \\
                    "%s: tile %r is not 3 per-axis factors" % (layer, w["tile"])
                tiled = np.tile(theta.reshape(1, 1, -1), w["tile"])
                assert tiled.shape == (1, 1, theta.size * heads), "%s: tile %r gives %s" % (
                    layer, w["tile"], tiled.shape)
            self.resources = {k: v for k, v in mapping.items()}
            log(op="resources", layers=sorted(mapping), tiles={k: [int(x) for x in np.asarray(
                weights[k]["tile"]).ravel()] for k in mapping if "tile" in weights[k]})

        def add_external_file(self, name, path):
            assert name in ("tokenizer.json", "hailo-config.json") and os.path.isfile(path)
            self.files.add(name)

        def load_model_script(self, script):
            self.script = script
            log(op="script", script=script, runner=self.number)

        def optimize(self, calib):
            check_environment()
            require_registered("optimize")
            assert self.state == "hailo_model" and self.resources, "optimize needs the HAR with resources"
            lines = [l.split("#", 1)[0].replace(" ", "") for l in self.script.splitlines()]
            cal = [l for l in lines if l.startswith("model_optimization_config(calibration")]
            bias = [l for l in lines if l.startswith("post_quantization_optimization(bias_correction")]
            assert len(cal) == 1 and len(bias) == 1
            # LNM finding 7: bias_accumulator.py has no case for grouped weights.
            if any("weight_group_size=" in l for l in lines) and "policy=enabled" in bias[0] \
                    and "use_saitama=True" in bias[0]:
                log(op="optimize_crashed", why="weight_group_size with bias_correction on saitama")
                raise AttributeError("'FusedQWGModule' object has no attribute 'mac'")
            assert any(l.startswith("set_kv_cache_global_params(") for l in lines)
            sizes = {v.shape[0] for v in calib.values()}
            assert len(sizes) == 1, sizes
            n = sizes.pop()
            assert "calibset_size=%d" % n in cal[0], "calibset_size in %s but %d samples given" % (cal[0], n)
            seq, hidden, heads = MAN["cache_size"], MAN["dims"]["hidden"], MAN["pe_tiles"]["q"]
            assert sorted(calib) == sorted(NET + "/" + i["dfc_layer"] for i in MAN["inputs"])
            for inp in MAN["inputs"]:
                a = calib[NET + "/" + inp["dfc_layer"]]
                want = {"embeddings": (n, 1, seq, hidden), "attention_mask": (n, 1, seq, heads * seq)}.get(
                    inp["role"], (n, seq))
                assert a.shape == want and a.dtype == np.float32, (inp["role"], a.shape, a.dtype)
            gpu = "use_saitama=True" in cal[0]
            # An enabled bias_correction without them falls back to the CPU (LNM finding 7).
            for l in [cal[0]] + [b for b in bias if "policy=enabled" in b]:
                assert ("use_saitama=True" in l and "device=cuda" in l) == gpu, "GPU arguments on one line only: " + l
            if gpu:
                assert os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, "", "99"), "CUDA devices not named"
            log(op="optimize", samples=n, gpu=gpu, cuda=os.environ.get("CUDA_VISIBLE_DEVICES"))
            configure()
            self.members = {NET + ".hn": json.dumps(hf.quantized_hn(net=NET, permuted=True)).encode()}
            self.state = "quantized_model"

        @contextlib.contextmanager
        def infer_context(self, target):
            assert isinstance(target, InferenceContext), target
            ctx = _OpenContext(target)
            try:
                yield ctx
            finally:
                ctx.open = False

        def infer(self, context, dataset, batch_size=8):
            """The emulator. FAKE_DFC_EMULATION: "exact" (default), "noise" (the
            quantized logits get FAKE_DFC_EMULATION_NOISE times their std of
            Gaussian noise), "crash" (SDK_QUANTIZED raises what LNM found
            DFC 5.3.0 raise on KV-cache graphs, Cache.__init__)."""
            assert isinstance(context, _OpenContext) and context.open, "infer() outside its infer_context"
            target = context.infer_context
            quantized = target in (InferenceContext.SDK_QUANTIZED, InferenceContext.SDK_BIT_EXACT)
            if quantized and self.state not in QUANTIZED_STATES:
                raise RuntimeError("stand-in DFC: %s emulation needs an optimized HAR, this one is %s"
                                   % (target.name, self.state))
            require_registered("load")
            mode = os.environ.get("FAKE_DFC_EMULATION", "exact")
            if quantized and mode == "crash":
                log(op="infer_crashed", context=target.name)
                raise TypeError("'in <string>' requires string as left operand, not NoneType")
            seq, hidden, heads = MAN["cache_size"], MAN["dims"]["hidden"], MAN["pe_tiles"]["q"]
            assert sorted(dataset) == sorted(NET + "/" + i["dfc_layer"] for i in MAN["inputs"]), sorted(dataset)
            n = {v.shape[0] for v in dataset.values()}
            assert len(n) == 1, n
            n = n.pop()
            for inp in MAN["inputs"]:  # the calibration layout (section 7)
                a = dataset[NET + "/" + inp["dfc_layer"]]
                want = {"embeddings": (n, 1, seq, hidden), "attention_mask": (n, 1, seq, heads * seq)}.get(
                    inp["role"], (n, seq))
                assert a.shape == want and a.dtype == np.float32, (inp["role"], a.shape, a.dtype)
            logits = emulated_logits(dataset)
            if quantized and mode == "noise":
                rng = np.random.default_rng(0)
                sigma = float(os.environ["FAKE_DFC_EMULATION_NOISE"]) * logits.std()
                logits = logits + rng.normal(0.0, sigma, logits.shape)
            log(op="infer", context=target.name, samples=n, batch_size=batch_size, runner=self.number)
            shards, out, at = MAN["lm_head_shards"], [], 0
            for w in shards:  # one NHWC array per output layer, in output order
                out.append(logits[:, at:at + w].reshape(n, 1, 1, w).astype(np.float32))
                at += w
            return out if len(out) > 1 else out[0]

        def compile(self):
            require_registered("load")
            paths = SDKPaths()
            assert paths.is_release and os.path.isdir(paths._build_dir), "SDK paths not patched before compile"
            assert self.state == "quantized_model", self.state
            hn = self.hn()
            layers = hn["layers"]
            groups = [NET + "__prefill", NET + "__tbt"]
            for g in groups:  # conv input order repaired
                conv = layers[g + "/conv21"]
                widths = [layers[p]["output_shapes"][0][-1] for p in conv["input"]]
                assert widths == [s[-1] for s in conv["input_shapes"]], "conv21 inputs out of order in " + g
            lines = [l.strip() for l in self.script.splitlines() if l.strip() and not l.startswith("#")]
            ng = sorted(re.match(r"^(\\S+) = network_group\\(\\[(\\S+)\\]\\)$", l).groups() for l in lines
                        if "network_group(" in l)
            assert ng == [(g, g) for g in groups], ng
            conv_lines = [l for l in lines if "format_conversion(" in l]
            caches = sorted(n for n, l in layers.items() if l.get("io_type") == "cache" and n.split("/")[0] in groups)
            assert len(conv_lines) == len(caches) and all(any(c in l for l in conv_lines) for c in caches)
            named = re.findall(r"[\\w.]+/[\\w.]+", " ".join(conv_lines))
            assert all(n.split("/")[0] in groups for n in named), "a line names a layer outside the two groups"
            log(op="compile", groups=[g for g, _ in ng], conversions=len(conv_lines), runner=self.number)
            self.state = "compiled_model"
            if os.environ.get("FAKE_DFC_HEF") == "garbage":
                return b"not a real HEF"
            sdk = tuple(int(x) for x in os.environ.get("FAKE_DFC_SDK", "5.3.0").split("."))
            return hw.genai_hef(**hw.spec_from_export(os.path.dirname(os.environ["FAKE_DFC_MANIFEST"]), sdk=sdk))
''')

DIMS = 'class Dims:\n    BATCH, HEIGHT, WIDTH, CHANNELS = "b", "h", "w", "c"\n'

FAKE_KERAS = textwrap.dedent('''
    """Stand-in for keras: only what the layer registration uses."""
    import types
    REGISTERED = set()

    class Layer:
        pass

    def register_keras_serializable(package="Custom", name=None):
        def register(cls):
            REGISTERED.add(cls)
            return cls
        return register

    layers = types.SimpleNamespace(Layer=Layer)
    saving = types.SimpleNamespace(register_keras_serializable=register_keras_serializable, REGISTERED=REGISTERED)
''')

FAKE_ACCELERAS_OPS = textwrap.dedent('''
    import keras

    class ElementwiseAddDirectOp(keras.layers.Layer):
        pass

    class LayerNormDecomposed(keras.layers.Layer):
        pass

    class NotALayer:
        pass

    LAYERS = [ElementwiseAddDirectOp, LayerNormDecomposed]
''')

FAKE_SDK_PATHS = textwrap.dedent('''
    """Stand-in for the DFC's paths singleton, as a non-release install has it."""
    class SDKPaths:
        HAILO_TEMP_DIR_PREFIX = "hailo_standin_"
        _instance = None

        def __new__(cls):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
                cls._instance._is_release = False
                cls._instance._build_dir = "/nonexistent/hailo/build"
            return cls._instance

        @property
        def is_release(self):
            return self._is_release
''')


def write_fake_dfc(root):
    files = {
        "hailo_sdk_client/__init__.py": FAKE_DFC,
        "hailo_sdk_client/exposed_definitions.py": DIMS,
        "keras/__init__.py": FAKE_KERAS,
        "hailo_model_optimization/__init__.py": "",
        "hailo_model_optimization/acceleras/__init__.py": "",
        "hailo_model_optimization/acceleras/atomic_ops/__init__.py": "",
        "hailo_model_optimization/acceleras/atomic_ops/ops.py": FAKE_ACCELERAS_OPS,
        # A submodule that does not import: the registration must go on.
        "hailo_model_optimization/acceleras/optional_gpu_ops.py": "raise ImportError('no such backend')\n",
        "hailo_sdk_common/__init__.py": "",
        "hailo_sdk_common/paths_manager/__init__.py": "",
        "hailo_sdk_common/paths_manager/paths.py": FAKE_SDK_PATHS,
    }
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def write_script(path, text):
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class Setup:
    def __init__(self, tmp, fixture=FIXTURE, cache=16, prefill=4):
        self.tmp = tmp
        self.out = tmp / "export"
        r = subprocess.run([str(BIN), "export", str(fixture), "-o", str(self.out), "--cache", str(cache),
                            "--prefill", str(prefill)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        if os.environ.get("COMPILE_DRIVER_UNDER_TEST"):
            shutil.copy(os.environ["COMPILE_DRIVER_UNDER_TEST"], self.out / "compile.py")
        self.manifest = json.loads((self.out / "manifest.json").read_text())
        self.scope = self.manifest["dfc"]["scope"]
        write_fake_dfc(tmp / "fake")
        # nvidia-smi stand-ins: one machine without a GPU, one with.
        for name, body in (("nogpu", "echo 'NVIDIA-SMI has failed' >&2; exit 9\n"),
                           ("gpu", "echo 'GPU 0: Stand-in GPU (UUID: GPU-0)'\n")):
            (tmp / name).mkdir()
            write_script(tmp / name / "nvidia-smi", body)
        self.calib = tmp / "calib.json"
        self.calib.write_text(json.dumps([[1, 2, 3, 4, 5], [7, 8, 9]]))
        self.gate_tokens = tmp / "gate.json"
        self.gate_tokens.write_text(json.dumps([[3, 1, 4, 1, 5, 9, 2], [6, 5, 3, 5]]))
        self.work = tmp / "work"

    def run(self, *args, gpu="nogpu", log="dfc.log", driver=None, env=None, memory_gib=64):
        """compile.py with the stand-in DFC. memory_gib: what --memory-gib tells
        the memory check (None: let it read this machine's), so that the
        tests do not depend on the RAM of the machine running them."""
        log_path = self.tmp / log
        e = dict(os.environ, PYTHONPATH=str(self.tmp / "fake"), FAKE_DFC_LOG=str(log_path),
                 FAKE_DFC_MANIFEST=str(self.out / "manifest.json"), HAR_FIXTURES_DIR=str(CLI_TESTS),
                 HEF_WRITER_DIR=str(REPO / "tools" / "fixtures"),
                 PATH=str(self.tmp / gpu) + os.pathsep + os.environ.get("PATH", ""))
        for k in ("CUDA_VISIBLE_DEVICES", "TRANSFORMERS_NO_TF", "NPY_PROMOTION_STATE"):
            e.pop(k, None)
        e.update(env or {})
        memory = ["--memory-gib", str(memory_gib)] if memory_gib is not None else []
        r = subprocess.run([sys.executable, str(driver or self.out / "compile.py"), *map(str, args), *memory],
                           capture_output=True, text=True, env=e, timeout=600)
        events = [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []
        return r, events

    def har(self, stage):
        return self.work / ("%s.%s.har" % (self.scope, stage))

    def hef_bytes(self, sdk=(5, 3, 0)):
        """What the stand-in's compile() returns for this export."""
        return hw.genai_hef(**hw.spec_from_export(self.out, sdk=sdk))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return Setup(tmp_path_factory.mktemp("drv"))


@pytest.fixture(scope="module")
def driver_run(setup):
    r, events = setup.run("--llm2hef", BIN, "--calib-tokens", setup.calib, "--gate-tokens", setup.gate_tokens,
                          "--work", setup.work, "-o", setup.tmp / "model.hef")
    return r, setup.out, setup.work, events, setup.tmp


def lines_of(har, what, manifest):
    r = subprocess.run([str(BIN), "har", "lines", str(har), "--for", what, "--manifest", str(manifest)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_driver_runs_every_step(driver_run, setup):
    r, out, work, events, tmp = driver_run
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp / "model.hef").read_bytes() == setup.hef_bytes()
    for stage in ("parsed", "fixed", "resources", "quantized", "quantized_fixed", "compiled"):
        assert setup.har(stage).is_file(), stage
    _, chn, _ = hf.read_har(setup.har("quantized_fixed"))
    assert json.loads(hf.read_har(setup.har("compiled"))[0][setup.scope + ".metadata.json"])["state"] \
        == "compiled_model"
    ops = [e["op"] for e in events]
    assert ops.count("script") == 2 and ops.count("optimize") == 1 and ops.count("compile") == 1
    comp = next(e for e in events if e["op"] == "compile")
    assert comp["groups"] == [setup.scope + "__prefill", setup.scope + "__tbt"] and comp["conversions"] == 4
    # the quantized HN the stand-in wrote keeps the base scope
    assert chn["net_params"]["net_scopes"] == [setup.scope, setup.scope + "__prefill", setup.scope + "__tbt"]


def test_no_gpu_is_said_up_front(driver_run):
    r, _, _, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    warning = r.stdout.find("optimize will run calibration and bias correction on the CPU, which is slow")
    assert 0 <= warning < r.stdout.find("step 1/7: parse")
    assert next(e for e in events if e["op"] == "optimize")["gpu"] is False


def test_resources_tile_is_per_axis(driver_run):
    r, out, _, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    man = json.loads((out / "manifest.json").read_text())
    tiles = next(e for e in events if e["op"] == "resources")["tiles"]
    roles = {man["dfc"]["scope"] + "/" + i["dfc_layer"]: i["role"] for i in man["inputs"]}
    assert tiles == {k: [1, 1, man["pe_tiles"]["q" if roles[k].startswith("pe_q") else "k"]] for k in tiles}
    assert len(tiles) == 4


def test_optimize_script_gets_the_a8_w4_line_and_the_real_sample_count(driver_run):
    r, out, work, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    man = json.loads((out / "manifest.json").read_text())
    scope = man["dfc"]["scope"]
    optimize_script = [e["script"] for e in events if e["op"] == "script"][0]
    expected = lines_of(work / ("%s.fixed.har" % scope), "optimize", out / "manifest.json")
    assert len(expected) == 1 and expected[0].startswith("quantization_param([") and "a8_w4" in expected[0]
    written = (out / "optimize.alls").read_text()
    # compression_level 0, as Hailo's own per-layer LLM script writes it: the
    # explicit lines choose the 4-bit weights (docs/compile.md).
    assert "model_optimization_flavor(compression_level=0, optimization_level=0)\n" in written
    default = "calibset_size=%d)" % man["dfc"]["calib_size"]
    assert default in written and man["dfc"]["calib_size"] != 2
    assert optimize_script == written.replace(default, "calibset_size=2)") + expected[0] + "\n"
    assert next(e for e in events if e["op"] == "optimize")["samples"] == 2


def test_compile_script_gets_groups_and_cache_lines(driver_run):
    r, out, work, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    scope = json.loads((out / "manifest.json").read_text())["dfc"]["scope"]
    compile_script = [e["script"] for e in events if e["op"] == "script"][1]
    expected = lines_of(work / ("%s.quantized_fixed.har" % scope), "compile", out / "manifest.json")
    assert compile_script == (out / "compile.alls").read_text() + "".join(line + "\n" for line in expected)
    assert "%s__prefill = network_group([%s__prefill])" % (scope, scope) in expected
    assert sum("format_conversion" in line for line in expected) == 4
    assert not any(scope + "/" in line for line in expected)  # the base scope is named nowhere


def test_fixed_hars_are_repaired(driver_run):
    r, out, work, _, _ = driver_run
    assert r.returncode == 0, r.stderr
    man = json.loads((out / "manifest.json").read_text())
    scope = man["dfc"]["scope"]
    _, hn, _ = hf.read_har(work / ("%s.fixed.har" % scope))
    widths = {layer["output_shapes"][0][-1] for n, layer in hn["layers"].items()
              if layer["type"] == "input_layer" and n.split("/")[1] in ("input_layer3", "input_layer5")}
    assert widths == {man["theta_length"] * man["pe_tiles"]["k"]}
    _, qhn, _ = hf.read_har(work / ("%s.quantized_fixed.har" % scope))
    conv = qhn["layers"][scope + "__prefill/conv21"]
    assert conv["input"] == [scope + "__prefill/conv20", scope + "__prefill/input_layer1"]


@pytest.mark.parametrize("gpu,flag,expect", [("gpu", [], True), ("gpu", ["--gpu", "no"], False),
                                             ("nogpu", ["--gpu", "yes"], True)])
def test_resume_from_optimize_with_the_gpu_switch(driver_run, setup, gpu, flag, expect):
    r0 = driver_run[0]
    assert r0.returncode == 0, r0.stderr
    log = "resume-%s-%s.log" % (gpu, "-".join(flag) or "auto")
    hef = setup.tmp / ("resumed-%s.hef" % log)
    r, events = setup.run("--from", "optimize", *flag, "--llm2hef", BIN, "--calib-tokens", setup.calib,
                          "--work", setup.work, "-o", hef, gpu=gpu, log=log)
    assert r.returncode == 0, r.stdout + r.stderr
    assert hef.read_bytes() == setup.hef_bytes()
    ops = [e["op"] for e in events]
    assert "translate" not in ops and "resources" not in ops
    assert {k: events[0][k] for k in ("op", "har", "state")} == {"op": "init", "har": str(setup.har("resources")),
                                                                 "state": "hailo_model"}
    opt = next(e for e in events if e["op"] == "optimize")
    assert opt["gpu"] is expect
    script = [e["script"] for e in events if e["op"] == "script"][0]
    calibration = next(line for line in script.splitlines() if line.startswith("model_optimization_config(calibration"))
    bias = next(line for line in script.splitlines()
                if line.startswith("post_quantization_optimization(bias_correction"))
    for line in (calibration, bias):
        assert ("use_saitama=True" in line and "device=cuda" in line) is expect, line
    if expect:
        assert opt["cuda"] == "0" and "slow" not in r.stdout
    else:
        assert "which is slow" in r.stdout


def test_resume_from_compile(driver_run, setup):
    assert driver_run[0].returncode == 0
    hef = setup.tmp / "from-compile.hef"
    r, events = setup.run("--from", "compile", "--llm2hef", BIN, "--work", setup.work, "-o", hef,
                          log="from-compile.log")
    assert r.returncode == 0, r.stdout + r.stderr  # no calibration input needed
    assert [e["op"] for e in events] == ["init", "script", "compile", "save_har"]
    assert events[0]["har"] == str(setup.har("quantized_fixed")) and events[0]["state"] == "quantized_model"


def old_llm2hef(tmp):
    fake = tmp / "old-llm2hef"
    write_script(fake, 'echo "llm2hef 0.0.1"\n')
    return fake


@pytest.mark.parametrize("case", ["calib-missing", "calib-not-json", "calib-bad-id", "llm2hef-missing",
                                  "llm2hef-old", "output-not-writable", "from-without-har"])
def test_fails_before_the_parse(setup, case, tmp_path):
    bad = tmp_path / "bad.json"
    args = {"--llm2hef": BIN, "--calib-tokens": setup.calib, "--work": tmp_path / "work",
            "-o": tmp_path / "model.hef"}
    extra = []
    if case == "calib-missing":
        args["--calib-tokens"], needle = tmp_path / "nothing.json", "no such file"
    elif case == "calib-not-json":
        bad.write_text("[[1, 2,")
        args["--calib-tokens"], needle = bad, "not valid JSON"
    elif case == "calib-bad-id":
        bad.write_text(json.dumps([[1, 2], [3, setup.manifest["dims"]["vocab"]]]))
        args["--calib-tokens"], needle = bad, "sequence 1 holds %d" % setup.manifest["dims"]["vocab"]
    elif case == "llm2hef-missing":
        args["--llm2hef"], needle = tmp_path / "no" / "llm2hef", "llm2hef must be installed on this DFC machine"
    elif case == "llm2hef-old":
        args["--llm2hef"], needle = old_llm2hef(tmp_path), "is llm2hef 0.0.1; this export needs llm2hef"
    elif case == "output-not-writable":
        (tmp_path / "afile").write_text("")
        args["-o"], needle = tmp_path / "afile" / "model.hef", "output (-o) folder"
    else:
        extra, needle = ["--from", "fix-quantized"], "quantized.har is missing"
    r, events = setup.run(*[x for kv in args.items() for x in kv], *extra, log="fail-%s.log" % case)
    assert r.returncode != 0 and needle in r.stderr, r.stderr
    assert events == []  # nothing reached the DFC
    assert not (tmp_path / "model.hef").exists()


def test_the_stand_in_refuses_a_quantized_har_without_registration(driver_run, setup):
    # The double must be able to fail: loading the quantized HAR without the
    # acceleras registration is refused as the real DFC refuses it.
    assert driver_run[0].returncode == 0
    code = (PATCH_SDK_PATHS + "from hailo_sdk_client import ClientRunner\n"
            "ClientRunner(har=%r)\n" % str(setup.har("quantized")))
    r = run_against_stand_in(setup, code)
    assert r.returncode != 0 and "Unknown layer" in r.stderr


# The SDK-path patch as LNM writes it (pipeline/s6_compile_hef.py), for the
# stand-in's own negative checks below.
PATCH_SDK_PATHS = ("import tempfile\n"
                   "from hailo_sdk_common.paths_manager.paths import SDKPaths\n"
                   "p = SDKPaths()\n"
                   "p._is_release, p._build_dir = True, tempfile.mkdtemp()\n")


def run_against_stand_in(setup, code):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(setup.tmp / "fake"), NPY_PROMOTION_STATE="legacy",
                                   TRANSFORMERS_NO_TF="1", FAKE_DFC_LOG=str(setup.tmp / "neg.log"),
                                   FAKE_DFC_MANIFEST=str(setup.out / "manifest.json"),
                                   HAR_FIXTURES_DIR=str(CLI_TESTS),
                                   HEF_WRITER_DIR=str(REPO / "tools" / "fixtures")))


# --- issue 27, 2.5: the SDK paths are patched before the DFC is imported ----------------

def test_sdk_paths_are_patched_before_the_dfc_is_imported(driver_run, setup):
    # The whole run went through the stand-in, which refuses an import of
    # hailo_sdk_client before the patch (LNM's order); it must be able to refuse.
    assert driver_run[0].returncode == 0, driver_run[0].stderr
    r = run_against_stand_in(setup, "import hailo_sdk_client\n")
    assert r.returncode != 0 and "imported before the SDK paths were patched" in r.stderr, r.stderr
    assert run_against_stand_in(setup, PATCH_SDK_PATHS + "import hailo_sdk_client\n").returncode == 0


# --- issue 27, 2.6: model.hef is written before the compiled HAR ------------------------

def test_a_failed_save_of_the_compiled_har_keeps_the_hef(driver_run, setup):
    assert driver_run[0].returncode == 0
    hef = setup.tmp / "save-fails.hef"
    r, events = setup.run("--from", "compile", "--llm2hef", BIN, "--work", setup.work, "-o", hef,
                          log="save-fails.log", env={"FAKE_DFC_FAIL_SAVE": "compiled_model"})
    assert [e["op"] for e in events] == ["init", "script", "compile", "save_har_failed"]
    assert hef.read_bytes() == setup.hef_bytes(), r.stdout + r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: saving the compiled HAR" in r.stdout and "No space left on device" in r.stdout
    assert "next: llm2hef hef check" in r.stdout


# --- issue 27, 2.2: the closing hint passes --hailort when the HEF says which -----------

@pytest.mark.parametrize("hef_kind,option", [("5.3.0", "--hailort 5.3"), ("5.2.0", "--hailort 5.2"),
                                             ("garbage", None)])
def test_closing_hint_names_the_hailort_the_hef_needs(driver_run, setup, hef_kind, option):
    assert driver_run[0].returncode == 0
    hef = setup.tmp / ("hint-%s.hef" % hef_kind)
    env = {"FAKE_DFC_HEF": "garbage"} if hef_kind == "garbage" else {"FAKE_DFC_SDK": hef_kind}
    r, _ = setup.run("--from", "compile", "--llm2hef", BIN, "--work", setup.work, "-o", hef,
                     log="hint-%s.log" % hef_kind, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = setup.out / "manifest.json"
    check = "next: llm2hef hef check %s --manifest %s" % (hef, manifest)
    pack = "then: llm2hef package %s --manifest %s --model NAME[:TAG]" % (hef, manifest)
    lines = r.stdout.splitlines()
    if option is None:
        assert "compile.py: " + check in lines and "compile.py: " + pack in lines, r.stdout
        assert "no --hailort: `llm2hef hef inspect` could not read it" in r.stdout
        return
    assert "compile.py: %s %s" % (check, option) in lines and "compile.py: %s %s" % (pack, option) in lines, r.stdout
    # The hinted command is the one that passes: hef check judges for HailoRT 5.2 by default.
    hinted = subprocess.run([str(BIN), "hef", "check", str(hef), "--manifest", str(manifest), *option.split()],
                            capture_output=True, text=True, timeout=120)
    assert hinted.returncode == 0, hinted.stdout
    plain = subprocess.run([str(BIN), "hef", "check", str(hef), "--manifest", str(manifest)],
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == (0 if option == "--hailort 5.2" else 1), plain.stdout


# --- issue 27, 2.7: calibration memory is checked before the parse ----------------------

def test_memory_is_reported_before_the_parse(driver_run):
    r = driver_run[0]
    assert r.returncode == 0, r.stderr
    said = r.stdout.find("compile.py: memory: the DFC's 16 GB plus the calibration set (2 sample(s)")
    assert 0 <= said < r.stdout.find("step 1/7: parse"), r.stdout


@pytest.fixture(scope="module")
def big_cache(tmp_path_factory):
    """llama3-tiny at cache 2048 (6 heads): one calibration sample holds a
    2048 x 12288 float32 mask, about 100 MB."""
    setup = Setup(tmp_path_factory.mktemp("big"), fixture=FIXTURES / "llama3-tiny",
                  cache=2048, prefill=16)
    return setup


def sample_bytes(manifest):
    """One sample as compile.py holds it (docs/compile.md, Calibration): float32, every
    input but the four pe layers at its last two dimensions, one shared positions row."""
    seq = manifest["cache_size"]
    rest = [i["shape"][-2] * i["shape"][-1] for i in manifest["inputs"] if not i["role"].startswith("pe_")]
    return 4 * (seq + sum(rest))


def test_a_calibration_set_that_does_not_fit_is_refused_before_the_parse(big_cache, tmp_path):
    setup = big_cache
    sample = sample_bytes(setup.manifest)
    assert 90e6 < sample < 110e6
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps([[i + 1] for i in range(40)]))
    gib = 16  # 17.2e9 bytes: the DFC's 16 GB leave room for 10 samples, plus the one being read
    fit = (gib * 2 ** 30 - 16 * 10 ** 9) // sample - 1
    assert 0 < fit < 40
    args = ["--llm2hef", BIN, "--calib-tokens", calib, "--calib-size", 40, "--work", tmp_path / "work",
            "-o", tmp_path / "model.hef", "--no-gate"]  # all 40 calibrate: none held out for the gate
    r, events = setup.run(*args, log="mem-refused.log", memory_gib=gib)
    assert r.returncode != 0 and events == [], r.stdout + r.stderr
    assert "not enough memory for optimize" in r.stderr and "40 sample(s)" in r.stderr, r.stderr
    assert "At most %d sample(s) fit: pass --calib-size %d." % (fit, fit) in r.stderr, r.stderr
    assert "--memory-gib" in r.stderr and "step 1/7" not in r.stdout
    # One sample more than the answer is still refused, with the same answer.
    args[5] = fit + 1
    r, events = setup.run(*args, log="mem-refused-2.log", memory_gib=gib)
    assert r.returncode != 0 and events == [] and "At most %d sample(s) fit" % fit in r.stderr, r.stderr
    # Not even one sample beside the DFC's 16 GB.
    r, events = setup.run(*args, log="mem-refused-3.log", memory_gib=15)
    assert r.returncode != 0 and events == [] and "Not one sample fits" in r.stderr, r.stderr


def test_the_memory_check_reads_this_machine(big_cache, tmp_path):
    """Without --memory-gib: 20000 samples of 100 MB (2 TB) fit on no machine."""
    calib = tmp_path / "calib.json"
    calib.write_text(json.dumps([[1]] * 20000))
    r, events = big_cache.run("--llm2hef", BIN, "--calib-tokens", calib, "--calib-size", 20000, "--no-gate",
                              "--work", tmp_path / "work", "-o", tmp_path / "model.hef", log="mem-machine.log",
                              memory_gib=None)
    assert r.returncode != 0 and events == [], r.stdout + r.stderr
    assert "not enough memory for optimize" in r.stderr and "20000 sample(s)" in r.stderr, r.stderr
    assert "(MemTotal in /proc/meminfo)" in r.stderr or "(this process's cgroup memory limit)" in r.stderr


# --- issue 26, item 4: the precision plan in optimize, the emulator's gate before compile ---

def gate_verdict(setup):
    return json.loads((setup.work / ("%s.gate.json" % setup.scope)).read_text())


def test_the_gate_passes_on_a_faithful_emulation_and_compile_follows(driver_run, setup):
    r, _, _, events, tmp = driver_run
    assert r.returncode == 0, r.stdout + r.stderr
    ops = [e["op"] for e in events]
    # the emulation runs after optimize and before compile, on the quantized HAR the compile step uses
    assert ops.index("optimize") < ops.index("infer") < ops.index("compile")
    infers = [e for e in events if e["op"] == "infer"]
    # two --gate-tokens prompts (7 and 4 tokens) at 4 positions each, quantized and at full precision
    for context in ("SDK_QUANTIZED", "SDK_FP_OPTIMIZED"):
        assert sum(e["samples"] for e in infers if e["context"] == context) == 8, infers
    # The stand-in's emulation takes each softmax across all heads in every
    # context (LNM finding 11). Against its own full-precision output that
    # cancels, and a faithful quantization scores 1; against model.onnx the
    # defect would count as quantization loss.
    assert ("gate: against the DFC's SDK_FP_OPTIMIZED emulation of the same HAR: mean cosine 1.0000, worst 1.0000, "
            "top-1 agreement 1.00 over 8 position(s)") in r.stdout, r.stdout
    assert "gate: 2 prompt(s) (--gate-tokens), 8 position(s)" in r.stdout, r.stdout
    assert (tmp / "model.hef").read_bytes() == setup.hef_bytes()


def test_compile_loads_the_har_afresh_not_the_gates_runner(driver_run, setup, tmp_path):
    r, _, _, events, _ = driver_run
    assert r.returncode == 0, r.stdout + r.stderr
    compile_runner = next(e for e in events if e["op"] == "compile")["runner"]
    assert compile_runner not in {e["runner"] for e in events if e["op"] == "infer"}
    init = next(e for e in events if e["op"] == "init" and e["runner"] == compile_runner)
    assert init["har"] == str(setup.har("quantized_fixed"))
    assert events.index(init) > ops_index(events, "infer", last=True)
    # With --skip-har-fix the gate starts from the HAR optimize saved in this
    # very process: the runner that optimized (and saved) it must not be the
    # one the emulation runs on, nor the one compile runs on. (The stand-in
    # then refuses to compile a HAR whose conv inputs were never repaired.)
    work = tmp_path / "work"
    shutil.copytree(setup.work, work)
    r, events = setup.run("--from", "optimize", "--skip-har-fix", "--llm2hef", BIN, "--calib-tokens", setup.calib,
                          "--gate-tokens", setup.gate_tokens, "--work", work, "-o", tmp_path / "m.hef",
                          log="skip-fix.log")
    assert r.returncode != 0 and "conv21 inputs out of order" in r.stderr, r.stdout + r.stderr
    optimizer = next(e for e in events if e["op"] == "script")["runner"]
    gate_runners = {e["runner"] for e in events if e["op"] == "infer"}
    compile_runner = [e for e in events if e["op"] == "script"][-1]["runner"]
    assert len(gate_runners) == 1 and optimizer not in gate_runners, events
    assert compile_runner not in gate_runners | {optimizer}, events
    init = next(e for e in events if e["op"] == "init" and e["runner"] == compile_runner)
    assert init["har"] == str(work / ("%s.quantized.har" % setup.scope)), init


def ops_index(events, op, last=False):
    at = [i for i, e in enumerate(events) if e["op"] == op]
    return at[-1] if last else at[0]


NOISY = {"FAKE_DFC_EMULATION": "noise", "FAKE_DFC_EMULATION_NOISE": "3"}


@pytest.fixture(scope="module")
def failed_gate(driver_run, setup):
    assert driver_run[0].returncode == 0
    plan = setup.tmp / "gate-plan.json"
    plan.write_text(json.dumps({"version": 1, "plan": {"default_mode": "a8_w4", "lines": [
        {"onnx_node": "/model/layers.0/attn/o_proj/MatMul", "precision_mode": "a8_w8", "reason": "outliers"}]}}))
    hef = setup.tmp / "gate-failed.hef"
    r, events = setup.run("--from", "gate", "--plan", plan, "--llm2hef", BIN, "--gate-tokens", setup.gate_tokens,
                          "--work", setup.work, "-o", hef, log="gate-failed.log", env=NOISY)
    return r, events, hef, plan


def test_a_failing_emulation_stops_before_compile(failed_gate, setup):
    r, events, hef, plan = failed_gate
    assert r.returncode != 0, r.stdout + r.stderr
    # 8 positions in two batches, each quantized and at full precision
    assert [e["op"] for e in events if e["op"] != "init"] == ["infer"] * 4, events
    assert not hef.exists()
    v = gate_verdict(setup)
    assert v["verdict"] == "fail" and v["mean_cosine"] < 0.9 and v["min_cosine"] == 0.9, v
    err = r.stderr
    assert "mean cosine %.4f < --min-cosine 0.900" % v["mean_cosine"] in err, err
    assert "worst positions" in err and "prompt " in err, err
    # what would change them: the plan's entry and its next precision mode
    assert "/model/layers.0/attn/o_proj/MatMul at a8_w8 (outliers); next: \"precision_mode\": \"a16_w8\"" in err, err
    assert "--from compile --force" in err


def test_compile_after_a_failed_gate_needs_force(failed_gate, setup):
    r0 = failed_gate[0]
    assert r0.returncode != 0
    hef = setup.tmp / "after-failed-gate.hef"
    r, events = setup.run("--from", "compile", "--llm2hef", BIN, "--work", setup.work, "-o", hef,
                          log="after-failed.log")
    assert r.returncode != 0 and "the gate failed on" in r.stderr and "--from compile --force" in r.stderr, r.stderr
    assert "compile" not in [e["op"] for e in events] and not hef.exists()
    r, events = setup.run("--from", "compile", "--force", "--llm2hef", BIN, "--work", setup.work, "-o", hef,
                          log="forced.log")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "warning: compiling despite the failed gate (--force)" in r.stdout
    assert [e["op"] for e in events] == ["init", "script", "compile", "save_har"]
    assert hef.read_bytes() == setup.hef_bytes()
    # a passing gate run clears the way again
    r, _ = setup.run("--from", "gate", "--llm2hef", BIN, "--gate-tokens", setup.gate_tokens, "--work", setup.work,
                     "-o", hef, log="regate.log")
    assert r.returncode == 0 and gate_verdict(setup)["verdict"] == "pass", r.stdout + r.stderr


def test_an_emulator_that_crashes_gives_no_verdict_and_compile_goes_on(driver_run, setup):
    assert driver_run[0].returncode == 0
    hef = setup.tmp / "crash.hef"
    r, events = setup.run("--from", "gate", "--llm2hef", BIN, "--gate-tokens", setup.gate_tokens,
                          "--work", setup.work, "-o", hef, log="crash.log", env={"FAKE_DFC_EMULATION": "crash"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the DFC's SDK_QUANTIZED emulation failed (TypeError" in r.stdout and "NOT checked" in r.stdout
    assert gate_verdict(setup)["verdict"] == "unavailable"
    assert gate_verdict(setup)["failed"] == "the DFC's SDK_QUANTIZED emulation"
    assert "compile" in [e["op"] for e in events] and hef.read_bytes() == setup.hef_bytes()


def test_the_gate_never_takes_a_sample_from_calibration(driver_run, setup, tmp_path):
    """The gate's prompts are the sequences past --calib-size; with none to
    spare it judges on calibration sequences (and says so) rather than
    taking them from optimize, whose emulator may give no verdict at all."""
    assert driver_run[0].returncode == 0
    calib = tmp_path / "calib5.json"
    seqs = [[1, 2, 3], [4, 5, 6, 7], [8, 9], [10, 11, 12, 13, 14], [15, 16, 17]]
    calib.write_text(json.dumps(seqs))
    assert setup.manifest["dfc"]["calib_size"] > len(seqs)
    common = ["--from", "optimize", "--llm2hef", BIN, "--calib-tokens", calib, "--gate-size", 2,
              "--gate-positions", 1, "--work", setup.work, "-o", tmp_path / "m.hef"]
    # A small set: optimize gets all five, the gate reuses the last two.
    r, events = setup.run(*common, log="small-set.log")
    assert r.returncode == 0, r.stdout + r.stderr
    assert next(e for e in events if e["op"] == "optimize")["samples"] == 5
    assert sum(e["samples"] for e in events if e["op"] == "infer" and e["context"] == "SDK_QUANTIZED") == 2
    assert "gate: 2 prompt(s) (the last of the calibration input, which optimize also saw" in r.stdout, r.stdout
    assert gate_verdict(setup)["prompts_seen_by_optimize"] is True
    # Sequences past --calib-size are spare: the gate takes them, unseen.
    r, events = setup.run(*common, "--calib-size", 3, log="spare.log")
    assert r.returncode == 0, r.stdout + r.stderr
    assert next(e for e in events if e["op"] == "optimize")["samples"] == 3
    assert sum(e["samples"] for e in events if e["op"] == "infer" and e["context"] == "SDK_QUANTIZED") == 2
    assert "gate: 2 prompt(s) (held out of the calibration input: past --calib-size)" in r.stdout, r.stdout
    assert gate_verdict(setup)["prompts_seen_by_optimize"] is False
    # One sequence: it calibrates, and the gate still runs on it.
    one = tmp_path / "one.json"
    one.write_text(json.dumps([[1, 2, 3]]))
    r, events = setup.run(*common[:4], "--calib-tokens", one, "--work", setup.work, "-o", tmp_path / "m2.hef",
                          log="one-seq.log")
    assert r.returncode == 0, r.stdout + r.stderr
    assert next(e for e in events if e["op"] == "optimize")["samples"] == 1
    assert gate_verdict(setup)["verdict"] == "pass" and gate_verdict(setup)["prompts_seen_by_optimize"] is True


def test_optimize_applies_the_plan_through_har_lines(driver_run, setup, tmp_path):
    assert driver_run[0].returncode == 0
    plan = tmp_path / "quantization.json"
    plan.write_text(json.dumps({"version": 1, "plan": {"default_mode": "a8_w4", "lines": [
        {"onnx_node": "/model/layers.0/attn/o_proj/MatMul", "precision_mode": "a16_w8", "reason": "r"},
        {"onnx_node": "/model/layers.0/attn_residual/Add", "precision_mode": "a16_w16", "reason": "r"}]}}))
    common = ["--from", "optimize", "--llm2hef", BIN, "--calib-tokens", setup.calib, "--gate-tokens",
              setup.gate_tokens, "--work", setup.work, "-o", tmp_path / "p.hef"]
    r, events = setup.run(*common, "--plan", plan, log="plan.log")
    assert r.returncode == 0, r.stdout + r.stderr
    script = [e["script"] for e in events if e["op"] == "script"][0]
    want = subprocess.run([str(BIN), "har", "lines", str(setup.har("resources")), "--for", "optimize", "--manifest",
                           str(setup.out / "manifest.json"), "--plan", str(plan)], capture_output=True, text=True)
    assert want.returncode == 0, want.stderr
    plan_lines = want.stdout.splitlines()
    assert len(plan_lines) == 3 and "precision_mode=a16_w8)" in plan_lines[1]
    assert script.endswith("".join(line + "\n" for line in plan_lines)), script
    assert "optimize: precision plan %s" % plan in r.stdout
    # an entry that maps to nothing stops optimize before the calibration set is built
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "plan": {"lines": [
        {"onnx_node": "/model/layers.9/mlp/down_proj/MatMul", "precision_mode": "a16_w8"}]}}))
    r, events = setup.run(*common, "--plan", bad, log="plan-bad.log")
    assert r.returncode != 0 and "maps to no layer" in r.stderr and "optimize" not in [e["op"] for e in events]
    # --no-plan: the default lines only
    r, events = setup.run(*common, "--no-plan", log="no-plan.log")
    assert r.returncode == 0, r.stderr
    script = [e["script"] for e in events if e["op"] == "script"][0]
    assert "a16_w8" not in script and "precision plan" not in r.stdout


@pytest.fixture(scope="module")
def wide_softmax(tmp_path_factory):
    """gpt2-tiny at cache 32: in the stand-in's HN the o_proj conv takes the
    4 x 32 = 128-wide softmax output, one whole weight group of 128."""
    return Setup(tmp_path_factory.mktemp("g128"), cache=32, prefill=4)


def test_weight_group_size_runs_without_bias_correction(wide_softmax, tmp_path):
    """A plan asking for weight_group_size reaches optimize as Hailo's script
    writes it, and bias_correction is disabled: LNM found the two crash
    together on saitama (the stand-in raises that error)."""
    setup = wide_softmax
    plan = tmp_path / "quantization.json"
    plan.write_text(json.dumps({"version": 1, "plan": {"default_mode": "a8_w4", "lines": [
        {"onnx_node": "/model/layers.0/attn/o_proj/MatMul", "precision_mode": "a8_w4", "weight_group_size": 128,
         "reason": "Hailo's recipe"}]}}))
    r, events = setup.run("--llm2hef", BIN, "--calib-tokens", setup.calib, "--gate-tokens", setup.gate_tokens,
                          "--plan", plan, "--gpu", "yes", "--work", tmp_path / "work", "-o", tmp_path / "m.hef",
                          log="g128.log")
    assert r.returncode == 0, r.stdout + r.stderr
    script = [e["script"] for e in events if e["op"] == "script"][0]
    lines = script.splitlines()
    grouped = [line for line in lines if "weight_group_size=128" in line]
    assert len(grouped) == 1 and grouped[0] == lines[-1] and grouped[0].startswith("quantization_param([%s/conv"
                                                                                   % setup.scope), script
    assert "post_quantization_optimization(bias_correction, policy=disabled)" in lines, script
    calibration = next(line for line in lines if line.startswith("model_optimization_config(calibration"))
    assert "use_saitama=True" in calibration and "device=cuda" in calibration  # the GPU is still used
    assert "optimize: bias_correction disabled: the plan asks for weight_group_size" in r.stdout, r.stdout
    assert [e["op"] for e in events].count("optimize") == 1
    # The stand-in refuses the combination, as LNM found the DFC refuse it.
    code = (PATCH_SDK_PATHS + "import keras\n"
            "from hailo_model_optimization.acceleras.atomic_ops import ops\n"
            "[keras.saving.register_keras_serializable()(c) for c in ops.LAYERS]\n"
            "from hailo_sdk_client import ClientRunner\n"
            "r = ClientRunner(har=%r)\n"
            "r.load_model_script(%r)\n"
            "r.optimize({})\n" % (str(tmp_path / "work" / ("%s.resources.har" % setup.scope)),
                                   script.replace("policy=disabled", "policy=enabled, use_saitama=True, "
                                                  "device=cuda")))
    r = run_against_stand_in(setup, code)
    assert r.returncode != 0 and "'FusedQWGModule' object has no attribute 'mac'" in r.stderr, r.stderr


def test_the_stand_in_emulator_refuses_what_the_dfc_refuses(driver_run, setup):
    # SDK_QUANTIZED on a HAR that was never optimized, and infer outside its context.
    assert driver_run[0].returncode == 0
    code = (PATCH_SDK_PATHS + "from hailo_sdk_client import ClientRunner, InferenceContext\n"
            "r = ClientRunner(har=%r)\n"
            "with r.infer_context(InferenceContext.SDK_QUANTIZED) as ctx:\n"
            "    r.infer(ctx, {})\n" % str(setup.har("resources")))
    r = run_against_stand_in(setup, code)
    assert r.returncode != 0 and "needs an optimized HAR" in r.stderr, r.stderr


@pytest.mark.parametrize("template,needle", [
    # Parses for minja and for export's checks, but the load probe has one message: index 1 is out of range.
    ("{{ messages[1]['content'] }}", "chat_template fails on hailort's load probe"),
    # A first turn renders, a later turn (placeholder first) does not.
    ("{% if messages[0]['role'] == 'TMP' and messages|length > 1 %}{{ messages[5]['content'] }}{% endif %}x",
     "chat_template fails on a later turn"),
])
def test_a_template_hailort_cannot_render_stops_before_the_parse(setup, tmp_path, template, needle):
    """compile.py renders the exported template as hailort does when it loads
    the model (hailo-contract.md section 6) before any DFC work."""
    export = tmp_path / "export"
    shutil.copytree(setup.out, export)
    cfg_path = export / "resources" / "hailo-config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = template
    cfg_path.write_text(json.dumps(cfg))
    args = ["--llm2hef", BIN, "--calib-tokens", setup.calib, "--gate-tokens", setup.gate_tokens,
            "--work", tmp_path / "work", "-o", tmp_path / "model.hef"]
    r, events = setup.run(*args, driver=export / "compile.py", log="template-%d.log" % len(template))
    assert r.returncode != 0 and needle in r.stderr, r.stderr
    assert "--chat-template FILE" in r.stderr
    assert events == []  # nothing reached the DFC
    r, events = setup.run(*args, "--skip-template-check", "--no-gate", driver=export / "compile.py",
                          log="template-skip-%d.log" % len(template))
    assert r.returncode == 0, r.stderr
    assert "chat template: renders" not in r.stdout


def test_the_exported_template_is_rendered_before_the_parse(driver_run):
    r = driver_run[0]
    said = r.stdout.find("chat template: renders hailort's load probe, a first and a later turn (jinja2)")
    assert 0 <= said < r.stdout.find("step 1/7: parse"), r.stdout


def runtime_contract_block(text):
    """ROLES, the names unpacked from it, PE_TILING and PE_COSINE as a script
    assigns them at its top level (literal values, read without running it)."""
    import ast
    out = {}
    for node in ast.parse(text).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and target.id in ("ROLES", "PE_TILING", "PE_COSINE"):
            out[target.id] = ast.literal_eval(node.value)
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Name) and node.value.id == "ROLES":
            out["unpacked"] = tuple(e.id for e in target.elts)
    return out


@pytest.mark.parametrize("script", ["compile.py", "validate_on_device.py"])
def test_template_stand_ins_match_the_runtime_contract_export_writes(setup, script):
    # The .py.in templates carry stand-ins for the runtime-contract block so
    # that they are Python for ruff and editors; export replaces them with the
    # C++ tables (core/src/dfc/python_contract.cpp). A stand-in that drifted
    # would mislead whoever reads or lints the template.
    template = REPO / "core" / "src" / "dfc" / (script + ".in")
    stand_ins = runtime_contract_block(template.read_text())
    written = runtime_contract_block((setup.out / script).read_text())
    assert set(written) == {"ROLES", "unpacked", "PE_TILING", "PE_COSINE"}, written
    assert stand_ins == written
    assert written["unpacked"] == tuple(role.upper() for role in written["ROLES"])


# ---------------------------------------------------------------- calibration input (issue 40, part 2)

def logging_llm2hef(tmp):
    """An llm2hef that logs its arguments, then runs the real one."""
    log, exe = tmp / "llm2hef-calls.log", tmp / "llm2hef-logger"
    write_script(exe, "printf '%%s\\n' \"$*\" >> '%s'\nexec '%s' \"$@\"\n" % (log, BIN))
    return exe, log


def test_compile_py_applies_the_plan_beside_it_by_itself(driver_run, setup, tmp_path):
    """What calibrate's `next:` line promises: OUT/quantization.json is applied
    without --plan."""
    assert driver_run[0].returncode == 0
    copy = tmp_path / "export"
    shutil.copytree(setup.out, copy)
    (copy / "quantization.json").write_text(json.dumps({"version": 1, "plan": {"default_mode": "a8_w4", "lines": [
        {"onnx_node": "/model/layers.0/attn/o_proj/MatMul", "precision_mode": "a16_w8", "reason": "r"}]}}))
    r, events = setup.run("--from", "optimize", "--llm2hef", BIN, "--calib-tokens", setup.calib, "--gate-tokens",
                          setup.gate_tokens, "--work", setup.work, "-o", tmp_path / "p.hef",
                          driver=copy / "compile.py", log="beside.log")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "optimize: precision plan %s" % (copy / "quantization.json") in r.stdout, r.stdout
    script = [e["script"] for e in events if e["op"] == "script"][0]
    assert "precision_mode=a16_w8)" in script, script


def test_compile_py_calibrates_on_conversations_as_the_runtime_renders_them(driver_run, setup, tmp_path):
    import tokenizers

    from chat_rendering import genai_first_turn
    assert driver_run[0].returncode == 0
    conversations = [[{"role": "user", "content": "Hi"}],
                     [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                      {"role": "user", "content": "C"}]]
    chats = tmp_path / "chats.jsonl"
    chats.write_text("".join(json.dumps(c) + "\n" for c in conversations))
    exe, log = logging_llm2hef(tmp_path)
    r, events = setup.run("--from", "optimize", "--llm2hef", exe, "--calib-chat", chats, "--gate-tokens",
                          setup.gate_tokens, "--work", setup.work, "-o", tmp_path / "c.hef", log="chat.log")
    assert r.returncode == 0, r.stdout + r.stderr
    template = json.loads((setup.out / "resources" / "hailo-config.json").read_text())["chat_template"]
    tok = tokenizers.Tokenizer.from_file(str(setup.out / "resources" / "tokenizer.json"))
    want = [tok.encode(genai_first_turn(template, c), add_special_tokens=False).ids for c in conversations]
    fed = [[int(t) for t in line.split("--tokens ")[1].split()[0].split(",")]
           for line in log.read_text().splitlines() if line.startswith("inputs -q ")]
    assert fed[:2] == want, (fed, want)  # the calibration set; the gate's samples follow
    assert next(e for e in events if e["op"] == "optimize")["samples"] == 2
    # The default calibration set is larger: said, with how much more input it needs.
    default = setup.manifest["dfc"]["calib_size"]
    assert "gives 2 conversation(s) of the %d calibration takes by default" % default in r.stderr, r.stderr
    assert "%d more conversation(s) would give the %d" % (default - 2, default) in r.stderr


@pytest.mark.parametrize("case", ["bad-line", "short-text-explicit-size", "no-jinja2"])
def test_bad_calibration_input_is_exit_3_before_the_parse(setup, case, tmp_path):
    env = None
    if case == "no-jinja2":
        # This Python without jinja2: the chat file cannot be rendered, said with the install command.
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text("import sys\nsys.modules['jinja2'] = None\n")
        env = {"PYTHONPATH": os.pathsep.join([str(setup.tmp / "fake"), str(tmp_path / "site")])}
        source = tmp_path / "chats.jsonl"
        source.write_text('[{"role": "user", "content": "Hi"}]\n')
        args = ["--calib-chat", source, "--skip-template-check"]
        needle = "needs the Python package(s) jinja2, missing here. Install them with `%s -m pip install jinja2`" % (
            sys.executable)
    elif case == "bad-line":
        source = tmp_path / "chats.jsonl"
        source.write_text('[{"role": "user", "content": "Hi"}]\n[{"role": "user", "content": ["x"]}]\n')
        args, needle = ["--calib-chat", source], "--calib-chat %s:2: message 1: field 'content' is a list" % source
    else:
        source = tmp_path / "short.txt"
        source.write_text("A short text. " * 5)
        args, needle = ["--calib-text", source, "--calib-size", 40], "of the 40 asked for (--calib-size): it needs"
    r, events = setup.run("--llm2hef", BIN, *args, "--work", tmp_path / "work", "-o", tmp_path / "model.hef",
                          log="bad-%s.log" % case, env=env)
    assert r.returncode == 3 and needle in r.stderr, (r.returncode, r.stderr)
    assert events == [] and not (tmp_path / "model.hef").exists()
