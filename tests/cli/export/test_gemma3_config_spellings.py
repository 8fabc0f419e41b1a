"""Gemma 3's config.json spellings: the released checkpoints (transformers 4.5x)
write rope_theta, rope_scaling, rope_local_base_freq and sliding_window_pattern;
transformers 5 writes rope_parameters per layer type and layer_types. Both mean
the same model (transformers 5.24 builds the same inv_freq buffers and logits
from either; checked when this test was written), so llm2hef must export the
same graph from both. The legacy copy is written here from gemma3-tiny.

The binary comes from $LLM2HEF_BIN (ctest sets it), else build/llm2hef.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from llm2hef_cli import BIN, FIXTURES


def export(model: Path, out: Path) -> None:
    proc = subprocess.run([str(BIN), "export", str(model), "-o", str(out), "--cache", "32", "--prefill", "8",
                           "--name", "fx", "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def legacy_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "gemma3-legacy"
    shutil.copytree(FIXTURES / "gemma3-tiny", dst)
    cfg = json.loads((dst / "config.json").read_text())
    rope = cfg.pop("rope_parameters")
    types = cfg.pop("layer_types")
    cfg.pop("_sliding_window_pattern", None)
    assert types == ["sliding_attention", "sliding_attention", "full_attention"]
    full, local = rope["full_attention"], rope["sliding_attention"]
    assert full["rope_type"] == "linear" and local["rope_type"] == "default"
    cfg.update(rope_theta=full["rope_theta"], rope_scaling={"factor": full["factor"], "rope_type": "linear"},
               rope_local_base_freq=local["rope_theta"], sliding_window_pattern=3,
               hidden_act="gelu_pytorch_tanh", cache_implementation="hybrid")
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def test_legacy_and_v5_spellings_export_the_same_graph(tmp_path):
    export(FIXTURES / "gemma3-tiny", tmp_path / "v5")
    export(legacy_copy(tmp_path), tmp_path / "legacy")
    for f in ["model.onnx", "model.onnx.data", "resources/theta.npy", "resources/hailo-config.json"]:
        a, b = (tmp_path / "v5" / f).read_bytes(), (tmp_path / "legacy" / f).read_bytes()
        assert a == b, f"{f} differs between the two spellings"
