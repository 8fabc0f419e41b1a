#!/usr/bin/env python3
"""The reference path llm2hef is compared with: Hugging Face transformers
loads a checkpoint folder and torch.onnx.export (dynamo=True) writes it as
ONNX with external data.

    python3 tools/bench/torch_onnx_export.py CKPT OUT_DIR [--seq 96]

Loads the weights as float32 (what llm2hef writes), exports the forward pass
of `input_ids` of length --seq without a KV cache. Needs torch, transformers
and onnxscript; used by bench_export_vs_torch.py, not by the tests.
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out_dir")
    ap.add_argument("--seq", type=int, default=96, help="input length (default 96, llm2hef's default prefill)")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(args.checkpoint, dtype=torch.float32)
    model.eval()
    model.config.use_cache = False
    input_ids = torch.zeros((1, args.seq), dtype=torch.long)
    os.makedirs(args.out_dir, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, (input_ids,), os.path.join(args.out_dir, "model.onnx"), dynamo=True,
                          external_data=True, input_names=["input_ids"], output_names=["logits"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
