#!/usr/bin/env python3
"""Writes large-but-valid inputs for the parsing benchmark (bench_parse.sh)
and for the CLI tests of issue 12, classes 10 and 11 (linear parsing,
bounded memory). Only the standard library and the fixture helpers are used.

  har OUT --layers N           a parsed HAR whose HN is a chain of N conv layers
                               (input_layer1 -> conv1 -> ... -> convN -> output_layer1)
  hef OUT --groups G --edges E --tokenizer-mb T --config-kb C
                               a genai-shaped HEF (tools/fixtures/hef_writer.py) with G extra
                               network groups, E cache edges per group and big
                               tokenizer/hailo-config resources
  safetensors DIR --tensors N  a gpt2-tiny checkpoint copy whose model.safetensors has N extra
                               1-element tensors in its header
  tokenizer DIR --mb M         a gpt2-tiny checkpoint copy whose tokenizer.json is about M MB
  hn OUT --mb M                a parsed HAR whose HN is about M MB (a chain, as `har`)
"""
import argparse
import json
import shutil
import struct
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cli"))
sys.path.insert(0, str(REPO / "tools" / "fixtures"))
import har_fixtures as hf  # noqa: E402

# Bytes of HN JSON one chain layer takes (measured on this generator's output).
HN_BYTES_PER_LAYER = 404


def chain_hn(layers, net="tiny"):
    s = net + "/"
    hn = hf.Hn(net)
    width = 16
    x = hn.add(s + "input_layer1", "input_layer", [], [-1, 1, 8, width], in_shapes=[[-1, 1, 8, width]])
    for i in range(1, layers + 1):
        x = hn.add(s + "conv%d" % i, "conv", [x], [-1, 1, 8, width], hf.conv_params(width, width))
    hn.add(s + "output_layer1", "output_layer", [x], [-1, 1, 8, width])
    hn.order = [x]
    return hn.doc()


def write_chain_har(out, layers):
    hn = chain_hn(layers)
    hf.write_har(out, "tiny", hn, weights=None, state="hailo_model")
    return out


def cmd_har(args):
    write_chain_har(args.out, args.layers)


def cmd_hn(args):
    write_chain_har(args.out, max(1, int(args.mb * 1e6 / HN_BYTES_PER_LAYER)))


def cmd_hef(args):
    import hef_writer as hw
    # A tokenizer of about T MB: a vocab of distinct tokens plus merges.
    n = max(2, int(args.tokenizer_mb * 1e6 / 40))
    vocab = {"tok%08d" % i: i % 64 for i in range(n // 2)}
    merges = ["tok%08d tok%08d" % (i, i + 1) for i in range(n // 2)]
    tokenizer = {"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": merges},
                 "decoder": {"type": "ByteLevel"}}
    spec = hw.genai_spec(extra_groups=args.groups, caches=args.edges, tokenizer=tokenizer, contexts=args.contexts)
    config = dict(spec["config"])
    config["padding"] = ["x" * 64] * max(0, args.config_kb * 1000 // 70)
    if args.resources == 0 and args.extensions == 0:
        data = hw.genai_hef(extra_groups=args.groups, caches=args.edges, tokenizer=tokenizer, config=config,
                            contexts=args.contexts)
    else:
        data = hef_with_many_entries(hw, hw.genai_spec(extra_groups=args.groups, caches=args.edges,
                                                       tokenizer=tokenizer, config=config, contexts=args.contexts),
                                     args.resources, args.extensions)
    args.out.write_bytes(data)


def hef_with_many_entries(hw, s, resources, extensions, duplicate_last=False):
    """genai_hef's layout plus `resources` small extra resources and `extensions` extra extension entries
    (with duplicate_last, the last extra resource repeats the first one's name)."""
    ccws = bytes(range(256)) * 4
    items = [(name, data) for name, data in hw.genai_resources(s)]
    names = ["extra%d.bin" % i for i in range(resources)]
    if duplicate_last and resources > 1:
        names[-1] = names[0]
    items = [(n, b"%08d" % i) for i, n in enumerate(names)] + items  # the genai four stay last
    additional, entries = b"", b""
    for name, data in items:
        entries += hw.f_bytes(7, hw.resource(name, len(ccws) + len(additional), len(data), hw.xxh3(data)))
        additional += data
    ext = b"".join(hw.f_bytes(5, hw.extension(t)) for t in [13, 26, 31, 35] + [7] * extensions)
    proto = (hw.f_bytes(1, hw.header_message()) + b"".join(hw.f_bytes(2, g) for g in hw.genai_groups(s)) + ext
             + entries)
    return hw.assemble(proto, ccws, additional)


def copy_fixture(dst):
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(REPO / "tests" / "fixtures" / "gpt2-tiny", dst)


def cmd_safetensors(args):
    copy_fixture(args.out)
    path = args.out / "model.safetensors"
    blob = path.read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    extra = bytearray()
    for i in range(args.tensors):
        start = len(data) + len(extra)
        header["bench.extra.%d.weight" % i] = {"dtype": "F32", "shape": [1], "data_offsets": [start, start + 4]}
        extra += b"\0\0\0\0"
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data + bytes(extra))


def cmd_tokenizer(args):
    copy_fixture(args.out)
    path = args.out / "tokenizer.json"
    tok = json.loads(path.read_text())
    vocab_size = json.loads((args.out / "config.json").read_text())["vocab_size"]
    # Real tokenizer.json files are mostly vocab entries and merges; ids
    # stay inside the model's vocabulary (they may repeat: only range is checked).
    n = max(1, int(args.mb * 1e6 / 23))  # about 23 bytes per vocab entry or merge
    vocab = tok["model"]["vocab"]
    for i in range(n // 2):
        vocab["\u0120bench%07d" % i] = i % vocab_size
    merges = tok["model"].setdefault("merges", [])
    merges.extend("\u0120bench%07d x%d" % (i, i % 10) for i in range(n // 2))
    with open(path, "w") as f:
        json.dump(tok, f, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="kind", required=True)
    p = sub.add_parser("har")
    p.add_argument("out", type=Path)
    p.add_argument("--layers", type=int, required=True)
    p.set_defaults(fn=cmd_har)
    p = sub.add_parser("hn")
    p.add_argument("out", type=Path)
    p.add_argument("--mb", type=float, required=True)
    p.set_defaults(fn=cmd_hn)
    p = sub.add_parser("hef")
    p.add_argument("out", type=Path)
    p.add_argument("--groups", type=int, default=0)
    p.add_argument("--edges", type=int, default=2)
    p.add_argument("--tokenizer-mb", type=float, default=0.0)
    p.add_argument("--config-kb", type=int, default=0)
    p.add_argument("--contexts", type=int, default=2)
    p.add_argument("--resources", type=int, default=0)
    p.add_argument("--extensions", type=int, default=0)
    p.set_defaults(fn=cmd_hef)
    p = sub.add_parser("safetensors")
    p.add_argument("out", type=Path)
    p.add_argument("--tensors", type=int, required=True)
    p.set_defaults(fn=cmd_safetensors)
    p = sub.add_parser("tokenizer")
    p.add_argument("out", type=Path)
    p.add_argument("--mb", type=float, required=True)
    p.set_defaults(fn=cmd_tokenizer)
    args = ap.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()
