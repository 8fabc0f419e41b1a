#!/usr/bin/env python3
"""Writes two multi-GB synthetic HARs for the `har fix` benchmark:

  parsed.har     state hailo_model: the tiny fixture HN (pe tiling convs, mask
                 slices, a 151936-wide lm_head) with a weights .npz holding a
                 [1, 1, HIDDEN, 151936] lm_head kernel and filler arrays up to
                 --gb; fix rewrites the .npz (drops the tiling convs' arrays,
                 slices the lm_head into 4 shards) and streams the rest.
  quantized.har  state quantized_model: an HN with one permuted conv and the
                 same bytes as a .q.npz member; fix rewrites only the HN.

Arrays are generated and written block by block (numpy only, flat memory)."""
import argparse
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "cli"))
import har_fixtures as hf  # noqa: E402

BLOCK = 16 << 20


def write_array(zf, key, shape, rng):
    with zf.open(key + ".npy", "w", force_zip64=True) as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": tuple(shape)})
        left = int(np.prod(shape))
        while left:
            n = min(left, BLOCK // 4)
            f.write(rng.standard_normal(n, dtype=np.float32).tobytes())
            left -= n


def write_npz(path, small, big, rng):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for k, v in small.items():
            with zf.open(k + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, v)
        for key, shape in big:
            write_array(zf, key, shape, rng)


def add(tar, name, data=None, path=None):
    if path is not None:
        tar.add(str(path), arcname=name)
        return
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=3.0, help="approximate size of each HAR")
    ap.add_argument("--hidden", type=int, default=1536)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    vocab = 151936
    hn, small = hf.parsed_har(vocab=vocab, layers=1)
    head = hn["net_params"]["output_layers_order"][0]
    del small[head + "/kernel:0"]
    small[head + "/bias:0"] = np.zeros(vocab, np.float32)
    big = [(head + "/kernel:0", [1, 1, args.hidden, vocab])]
    left = int(args.gb * (1 << 30)) - args.hidden * vocab * 4
    filler = 0
    while left > 0:
        rows = min(8192, max(1, left // (8192 * 4)))
        big.append(("tiny/filler%d/kernel:0" % filler, [1, 1, rows, 8192]))
        left -= rows * 8192 * 4
        filler += 1
    npz = args.out / "weights.npz.tmp"
    write_npz(npz, small, big, rng)
    meta = lambda state: json.dumps({"state": state, "sdk_version": "5.3.0"}).encode()  # noqa: E731
    with tarfile.open(args.out / "parsed.har", "w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "tiny.hn", json.dumps(hn).encode())
        add(tar, "tiny.npz", path=npz)
        add(tar, "tiny.metadata.json", meta("hailo_model"))
    with tarfile.open(args.out / "quantized.har", "w", format=tarfile.PAX_FORMAT) as tar:
        add(tar, "tiny.hn", json.dumps(hf.quantized_hn(permuted=True)).encode())
        add(tar, "tiny.q.npz", path=npz)
        add(tar, "tiny.metadata.json", meta("quantized_model"))
    npz.unlink()
    for name in ("parsed.har", "quantized.har"):
        print("%s %.2f GB" % (args.out / name, (args.out / name).stat().st_size / 1e9))


if __name__ == "__main__":
    main()
