#!/usr/bin/env python3
"""Writes a genai-shaped HEF of several GB for the `hef inspect` benchmark.

The CCW section and embeddings.bin are holes in a sparse file (zeros on
read), so writing takes seconds and little disk; every checksum in the file
is still real (XXH3 streamed over the zeros), so `hef inspect --verify-all`
passes on it. Layout and encoding come from tools/fixtures/hef_writer.py.

    python3 tools/bench/make_big_hef.py OUT.hef --gib 4
"""
import argparse
import ctypes
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import hef_writer as hw  # noqa: E402

lib = hw._lib
lib.XXH3_createState.restype = ctypes.c_void_p
lib.XXH3_64bits_reset.argtypes = [ctypes.c_void_p]
lib.XXH3_64bits_update.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
lib.XXH3_64bits_digest.argtypes = [ctypes.c_void_p]
lib.XXH3_64bits_digest.restype = ctypes.c_uint64
lib.XXH3_freeState.argtypes = [ctypes.c_void_p]

ZEROS = bytes(64 << 20)


class Hasher:
    def __init__(self):
        self.state = lib.XXH3_createState()
        lib.XXH3_64bits_reset(self.state)

    def update(self, data: bytes):
        lib.XXH3_64bits_update(self.state, data, len(data))

    def zeros(self, n: int):
        while n > 0:
            k = min(n, len(ZEROS))
            lib.XXH3_64bits_update(self.state, ZEROS, k)
            n -= k

    def digest(self) -> int:
        d = lib.XXH3_64bits_digest(self.state)
        lib.XXH3_freeState(self.state)
        return d


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output")
    ap.add_argument("--gib", type=float, default=4.0, help="approximate file size in GiB (default 4)")
    args = ap.parse_args()

    # Qwen2.5-1.5B-like shapes (hailo-contract.md section 10): 151936 x 1536 uint16 embeddings = 445 MiB,
    # the rest of the size in the CCW section.
    s = hw.genai_spec(scope="base_model", vocab=151936, hidden=1536, heads=12, kv_heads=2, theta_len=128,
                      cache=2048, prefill=96, shards=4, contexts=124, caches=28)
    total = int(args.gib * (1 << 30))
    emb_size = s["vocab"] * s["hidden"] * 2
    small = [(n, d) for n, d in hw.genai_resources(s) if n != "embeddings.bin"]
    ccws_size = max(total - emb_size - (1 << 20), 1 << 20)

    emb_hash = Hasher()
    emb_hash.zeros(emb_size)
    emb_digest = emb_hash.digest()
    entries, additional_small = b"", b""
    for name, data in small:
        entries += hw.f_bytes(7, hw.resource(name, ccws_size + len(additional_small), len(data), hw.xxh3(data)))
        additional_small += data
    entries += hw.f_bytes(7, hw.resource("embeddings.bin", ccws_size + len(additional_small), emb_size, emb_digest))
    extensions = b"".join(hw.f_bytes(5, hw.extension(t)) for t in (13, 26, 31, 35))  # as the writer's default
    proto = hw.f_bytes(1, hw.header_message()) + b"".join(hw.f_bytes(2, g) for g in hw.genai_groups(s)) + \
        extensions + entries
    padding = (-(hw.HEADER_SIZE[3] + len(proto))) % 4096
    additional_size = len(additional_small) + emb_size

    body = Hasher()
    body.update(proto)
    body.zeros(padding + ccws_size)
    body.update(additional_small)
    body.zeros(emb_size)
    header = hw.pack_header(3, proto, ccws_size, padding, additional_size, body.digest(), hw.xxh3(proto))

    with open(args.output, "wb") as f:
        f.write(header + proto + bytes(padding))
        f.seek(ccws_size, os.SEEK_CUR)  # hole: the CCWs
        f.write(additional_small)
        f.truncate(f.tell() + emb_size)  # hole: embeddings.bin, the last bytes
    print(json.dumps({"file": args.output, "size": os.path.getsize(args.output), "proto_size": len(proto),
                      "contexts_per_group": s["contexts"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
