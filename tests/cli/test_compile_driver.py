"""compile.py end to end against a stand-in for Hailo's DFC.

The stand-in `hailo_sdk_client` (written below into a temporary folder) does
no compilation: its save_har writes HARs built by har_fixtures.py with the
manifest's dimensions (a parsed HAR after translate_onnx_model, a quantized
one after optimize) and it records every model script it is given. What is
checked is the driver's own logic: it runs `llm2hef har fix` before and
after optimize, and appends exactly what `llm2hef har lines` prints.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import har_fixtures as hf  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("LLM2HEF_BIN", REPO / "build" / "llm2hef"))
FIXTURE = REPO / "tests" / "fixtures" / "gpt2-tiny"

FAKE_DFC = textwrap.dedent('''
    """Stand-in for hailo_sdk_client: writes fixture HARs, records scripts."""
    import json, os, sys
    sys.path.insert(0, os.environ["HAR_FIXTURES_DIR"])
    import har_fixtures as hf

    LOG = os.environ["FAKE_DFC_LOG"]
    MAN = json.load(open(os.environ["FAKE_DFC_MANIFEST"]))

    def log(**kw):
        with open(LOG, "a") as f:
            f.write(json.dumps(kw) + "\\n")

    def configure():
        hf.SEQ, hf.HD = MAN["cache_size"], MAN["theta_length"]
        hf.NHEAD, hf.NKV = MAN["pe_tiles"]["q"], MAN["pe_tiles"]["k"]
        hf.HIDDEN = MAN["dims"]["hidden"]

    class ClientRunner:
        def __init__(self, hw_arch, har=None):
            self.har, self.state = har, ("loaded" if har else "new")
            log(op="init", har=har)

        def translate_onnx_model(self, path, net, **kw):
            assert os.path.isfile(path)
            assert sorted(kw["net_input_shapes"]) == sorted(i["name"] for i in MAN["inputs"])
            self.net, self.state = net, "parsed"

        def save_har(self, path):
            configure()
            net = MAN["dfc"]["scope"]
            if self.state == "parsed":
                hn, w = hf.parsed_har(vocab=MAN["dims"]["vocab"], layers=1, net=net)
                hf.write_har(path, net, hn, w, state="hailo_model")
            else:
                assert self.state == "optimized"
                hf.write_har(path, net, hf.quantized_hn(net=net, permuted=True), None, state="quantized_model")
            log(op="save_har", path=path, state=self.state)

        def add_external_resources(self, res):
            log(op="resources", layers=sorted(res["input_layers_mapping"]))

        def add_external_file(self, name, path):
            assert os.path.isfile(path)

        def load_model_script(self, script):
            log(op="script", script=script)

        def optimize(self, calib):
            assert all(v.shape[0] >= 1 for v in calib.values())
            self.state = "optimized"

        def compile(self):
            return b"not a real HEF"
''')

DIMS = 'class Dims:\n    BATCH, HEIGHT, WIDTH, CHANNELS = "b", "h", "w", "c"\n'


@pytest.fixture(scope="module")
def driver_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("drv")
    out = tmp / "export"
    r = subprocess.run([str(BIN), "export", str(FIXTURE), "-o", str(out), "--cache", "16", "--prefill", "4"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    pkg = tmp / "fake" / "hailo_sdk_client"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_DFC)
    (pkg / "exposed_definitions.py").write_text(DIMS)
    calib = tmp / "calib.json"
    calib.write_text(json.dumps([[1, 2, 3, 4, 5], [7, 8, 9]]))
    log = tmp / "dfc.log"
    env = dict(os.environ, PYTHONPATH=str(tmp / "fake"), FAKE_DFC_LOG=str(log),
               FAKE_DFC_MANIFEST=str(out / "manifest.json"), HAR_FIXTURES_DIR=str(Path(__file__).parent))
    work = tmp / "work"
    r = subprocess.run([sys.executable, str(out / "compile.py"), "--llm2hef", str(BIN), "--calib-tokens", str(calib),
                        "--work", str(work), "-o", str(tmp / "model.hef")], capture_output=True, text=True, env=env, timeout=600)
    events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return r, out, work, events, tmp


def lines_of(har, what, manifest):
    r = subprocess.run([str(BIN), "har", "lines", str(har), "--for", what, "--manifest", str(manifest)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_driver_runs_every_step(driver_run):
    r, out, work, events, tmp = driver_run
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp / "model.hef").read_bytes() == b"not a real HEF"
    scope = json.loads((out / "manifest.json").read_text())["dfc"]["scope"]
    for stage in ("parsed", "fixed", "quantized", "quantized_fixed"):
        assert (work / ("%s.%s.har" % (scope, stage))).is_file(), stage
    assert [e["op"] for e in events if e["op"] == "script"] == ["script", "script"]


def test_optimize_script_gets_the_a8_w4_line(driver_run):
    r, out, work, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    scope = json.loads((out / "manifest.json").read_text())["dfc"]["scope"]
    optimize_script = [e["script"] for e in events if e["op"] == "script"][0]
    expected = lines_of(work / ("%s.fixed.har" % scope), "optimize", out / "manifest.json")
    assert len(expected) == 1 and expected[0].startswith("quantization_param([") and "a8_w4" in expected[0]
    assert optimize_script == (out / "optimize.alls").read_text() + expected[0] + "\n"


def test_compile_script_gets_groups_and_cache_lines(driver_run):
    r, out, work, events, _ = driver_run
    assert r.returncode == 0, r.stderr
    scope = json.loads((out / "manifest.json").read_text())["dfc"]["scope"]
    compile_script = [e["script"] for e in events if e["op"] == "script"][1]
    expected = lines_of(work / ("%s.quantized_fixed.har" % scope), "compile", out / "manifest.json")
    assert compile_script == (out / "compile.alls").read_text() + "".join(l + "\n" for l in expected)
    assert "%s__prefill = network_group([%s__prefill])" % (scope, scope) in expected
    assert sum("format_conversion" in l for l in expected) == 4


def test_fixed_hars_are_repaired(driver_run):
    r, out, work, _, _ = driver_run
    assert r.returncode == 0, r.stderr
    man = json.loads((out / "manifest.json").read_text())
    scope = man["dfc"]["scope"]
    _, hn, _ = hf.read_har(work / ("%s.fixed.har" % scope))
    widths = {l["output_shapes"][0][-1] for n, l in hn["layers"].items()
              if l["type"] == "input_layer" and n.split("/")[1] in ("input_layer3", "input_layer5")}
    assert widths == {man["theta_length"] * man["pe_tiles"]["k"]}
    _, qhn, _ = hf.read_har(work / ("%s.quantized_fixed.har" % scope))
    conv = qhn["layers"][scope + "__prefill/conv21"]
    assert conv["input"] == [scope + "__prefill/conv20", scope + "__prefill/input_layer1"]
