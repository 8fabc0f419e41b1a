"""The stand-in's "chip": what a compiled llm2hef export would compute, done in
fp32 by onnxruntime on the export's model.onnx.

It is no part of HailoRT. It plays the device behind the stand-in API in
pyhailort.py: it holds the export folder (manifest, resources, model.onnx),
the HEF's external resources as the DFC would append them (embeddings.bin as
uint16 codes, rope_theta_data.bin, hailo-config.json, tokenizer.json), and a KV
cache shared by the `__prefill` and `__tbt` groups of one HEF on one VDevice
(HailoRT shares cache edges between the two groups by cache_id,
hailo-contract.md section 8).

How a run is computed: `update_cache_offset(k)` announces k new tokens; the
run takes the bottom k rows of its inputs as those tokens (the runtime bottom-
aligns real rows, pre_process.cpp), dequantizes the uint16 embedding codes and
the uint8 mask row, checks that the pe tables are the theta-wide row tiled
(heads times for q, kv heads for k), and commits them. The logits are those of
model.onnx over the whole window: every committed token in its row (bottom-
aligned), with the mask row it was given at its own run, shifted left by the
tokens committed since (the window slides right as the cache fills), padding
rows above. The mask a caller sends is used as given, so a wrong mask gives
wrong logits, as it would on the chip.

Deliberate faults for tests: HAILO_STANDIN_PERTURB=<x> adds Gaussian noise of
x times the logits' standard deviation to every InferModel output (a "chip"
that computes wrongly).
"""
from __future__ import annotations

import json
import os

import numpy as np

MASK_BLOCKED = -100.0
MASK_ALLOWED = 0.0


class StandInLimitation(RuntimeError):
    """Something the stand-in cannot emulate (not a HailoRT error)."""


class QuantParams:
    def __init__(self, zp, scale, lo, hi):
        self.qp_zp, self.qp_scale, self.limvals_min, self.limvals_max = float(zp), float(scale), float(lo), float(hi)


def quantize(values, q, dtype):
    """Quantization::quantize_input (hailort quantization.hpp): clip to the
    limvals, divide by the scale, add the zero point, round half to even."""
    info = np.iinfo(dtype)
    x = np.clip(np.asarray(values, np.float32), q.limvals_min, q.limvals_max)
    codes = np.rint(x / np.float32(q.qp_scale) + np.float32(q.qp_zp))
    return np.clip(codes, info.min, info.max).astype(dtype)


def dequantize(codes, q):
    return ((codes.astype(np.float32) - np.float32(q.qp_zp)) * np.float32(q.qp_scale)).astype(np.float32)


class Export:
    """An llm2hef export folder read as the stand-in HEF's content."""

    def __init__(self, folder):
        self.folder = folder
        path = lambda *p: os.path.join(folder, *p)  # noqa: E731
        if not os.path.isfile(path("manifest.json")):
            raise FileNotFoundError(folder + ": no manifest.json (set HAILO_STANDIN_EXPORT to the export folder)")
        self.manifest = json.load(open(path("manifest.json")))
        self.config = json.load(open(path("resources", "hailo-config.json")))
        self.tokenizer_json = open(path("resources", "tokenizer.json"), "rb").read()
        m = self.manifest
        self.n = m["cache_size"]
        self.prefill = m["prefill"]
        self.hidden = m["dims"]["hidden"]
        self.heads = m["dims"]["heads"]
        self.q_tiles, self.k_tiles = m["pe_tiles"]["q"], m["pe_tiles"]["k"]
        self.shards = list(m["lm_head_shards"])
        self.embeddings = np.load(path("resources", "embeddings.npy")).astype(np.float32)
        self.theta = np.load(path("resources", "theta.npy")).astype(np.float32)
        self.t = self.theta.shape[0]
        lo, hi = float(self.embeddings.min()), float(self.embeddings.max())
        scale = (hi - lo) / 65535.0 or 1.0
        # What the DFC would give input_layer1 (a16): a range covering the table.
        self.embed_q = QuantParams(round(-lo / scale), scale, lo, hi)
        # input_layer2 (a8) for LNM's additive 0 / -100 mask: code 255 is 0, code 0 is -100.
        self.mask_q = QuantParams(255.0, 100.0 / 255.0, MASK_BLOCKED, MASK_ALLOWED)
        self.groups = ([g for g in os.environ.get("HAILO_STANDIN_GROUPS", "").split(",") if g]
                       or list(m["dfc"]["network_groups"]))
        self.input_names = {role: name for role, name in ((i["role"], i["name"]) for i in m["inputs"])}
        self._session = None

    def resource(self, name):
        if name == "embeddings.bin":
            return quantize(self.embeddings, self.embed_q, np.uint16).tobytes()
        if name == "rope_theta_data.bin":
            return self.theta.astype("<f4").tobytes()
        if name == "hailo-config.json":
            return json.dumps(self.config).encode()
        if name == "tokenizer.json":
            return self.tokenizer_json
        raise KeyError(name)

    @property
    def session(self):
        if self._session is None:
            import onnxruntime as ort
            self._session = ort.InferenceSession(os.path.join(self.folder, "model.onnx"),
                                                 providers=["CPUExecutionProvider"])
        return self._session

    def pe_row(self, position):
        angle = self.theta * np.float32(position)
        return np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)

    def prompt_rows(self, tokens):
        """Rows for a fresh context holding `tokens` (what the genai server's
        own prefill amounts to): fp32 embeddings, causal mask, positions 0..n-1."""
        n, count = self.n, len(tokens)
        rows = []
        for i, tok in enumerate(tokens):
            mask = np.full((self.heads, n), MASK_BLOCKED, np.float32)
            mask[:, n - count: n - count + i + 1] = MASK_ALLOWED
            cos, sin = self.pe_row(i)
            rows.append({"emb": self.embeddings[tok], "mask": mask.reshape(-1),
                         "pe_q_cos": cos, "pe_q_sin": sin, "pe_k_cos": cos, "pe_k_sin": sin})
        return rows

    def logits(self, rows):
        """model.onnx over one window. rows: list of dicts (oldest first) with
        emb [H], pe_q_cos/pe_q_sin/pe_k_cos/pe_k_sin [T], mask [heads*N]."""
        n, h = self.n, self.hidden
        rows = rows[-n:]
        first = n - len(rows)
        emb = np.zeros((n, h), np.float32)
        mask = np.full((n, self.heads * n), MASK_ALLOWED, np.float32)
        cos0, sin0 = self.pe_row(0)
        pe = {k: np.tile(cos0 if k.endswith("cos") else sin0, (n, 1))
              for k in ("pe_q_cos", "pe_q_sin", "pe_k_cos", "pe_k_sin")}
        for i, r in enumerate(rows):
            emb[first + i] = r["emb"]
            mask[first + i] = r["mask"]
            for k in pe:
                pe[k][first + i] = r[k]
        feeds = {self.input_names["embeddings"]: emb[None], self.input_names["attention_mask"]: mask[None, None]}
        for k, v in pe.items():
            feeds[self.input_names[k]] = v[None]
        return self.session.run(None, feeds)[0].reshape(-1).astype(np.float32)


class KvCache:
    """The cache of one HEF on one VDevice: committed token rows and the
    offset moved by update_cache_offset."""

    def __init__(self, export):
        self.export = export
        self.rows = []      # committed rows, oldest first
        self.total = 0      # tokens committed so far
        self.pending = 0    # offset moved since the last run

    def move(self, delta):
        self.pending += int(delta)

    def run(self, group_rows, inputs):
        """inputs: role -> 2-D array [rows, width] already decoded to numbers
        (uint16 embeddings, uint8 mask, float32 pe)."""
        e = self.export
        k = self.pending
        if k < 1 or k > group_rows:
            raise StandInLimitation(
                "run with the cache offset moved by %d for a %d-row group: the genai server moves it by the "
                "number of new tokens (1..rows) before every run "
                "(llm_server.cpp process_prefill_inputs_chunk, handle_tbt_phase)" % (k, group_rows))
        self.pending = 0
        n, t = e.n, e.t
        for r in range(group_rows - k, group_rows):
            row = {"emb": dequantize(inputs["embeddings"][r], e.embed_q),
                   "mask": dequantize(inputs["attention_mask"][r], e.mask_q)}
            for role, tiles in (("pe_q_cos", e.q_tiles), ("pe_q_sin", e.q_tiles),
                                ("pe_k_cos", e.k_tiles), ("pe_k_sin", e.k_tiles)):
                wide = inputs[role][r].reshape(tiles, t)
                if not np.array_equal(wide, np.broadcast_to(wide[0], wide.shape)):
                    raise StandInLimitation(role + ": the head copies of a row differ; the runtime tiles one "
                                            "theta-wide row (pre_process.cpp tile_along_last_axis) and the stand-in "
                                            "can only compute that")
                row[role] = wide[0].copy()
            row["end"] = None
            self.rows.append(row)
        self.total += k
        for row in self.rows[-k:]:
            row["end"] = self.total
        self.rows = self.rows[-n:]
        window = []
        for row in self.rows:
            shift = self.total - row["end"]
            m = row["mask"].reshape(e.heads, n)
            shifted = np.full_like(m, MASK_BLOCKED)
            shifted[:, : n - shift] = m[:, shift:]
            window.append(dict(row, mask=shifted.reshape(-1)))
        logits = e.logits(window)
        perturb = float(os.environ.get("HAILO_STANDIN_PERTURB", "0") or 0)
        if perturb:
            rng = np.random.default_rng(self.total)
            logits = logits + rng.normal(0.0, perturb * float(logits.std()), logits.shape).astype(np.float32)
        return logits


class Tokenizer:
    """A greedy longest-match tokenizer over tokenizer.json's vocabulary. It is
    not the runtime's tokenizer (tokenizers-cpp); the script under test only
    needs ids that the runtime's own tokenize() would hand back. As Hugging
    Face tokenizers (which tokenizers-cpp runs) does, the `added_tokens`
    (special ones included) are split out of the text first and become their
    own ids, so a template's literal "<bos>" is the BOS token. No
    post-processor runs: the runtime adds no BOS itself (hailo-contract.md
    section 6)."""

    def __init__(self, tokenizer_json):
        doc = json.loads(tokenizer_json)
        model = doc["model"]
        self.added = {t["content"]: t["id"] for t in doc.get("added_tokens") or [] if t.get("content")}
        vocab = model["vocab"]
        self.vocab = vocab if isinstance(vocab, dict) else {piece: i for i, (piece, _) in enumerate(vocab)}
        self.inverse = {i: p for p, i in self.vocab.items()}
        self.inverse.update({i: p for p, i in self.added.items()})
        self.byte_level = "\u0120" in "".join(self.vocab)
        self.longest = max(len(p) for p in self.vocab)

    def encode(self, text):
        ids, i, start = [], 0, 0
        while i < len(text):
            hit = max((a for a in self.added if text.startswith(a, i)), key=len, default=None)
            if hit is None:
                i += 1
                continue
            ids += self._encode_plain(text[start:i]) + [self.added[hit]]
            i = start = i + len(hit)
        return ids + self._encode_plain(text[start:])

    def _encode_plain(self, text):
        if self.byte_level:
            text = text.replace(" ", "\u0120").replace("\n", "\u010a")
        ids, i = [], 0
        while i < len(text):
            for size in range(min(self.longest, len(text) - i), 0, -1):
                piece = text[i:i + size]
                if piece in self.vocab:
                    ids.append(self.vocab[piece])
                    i += size
                    break
            else:
                i += 1  # a character the vocabulary lacks is dropped
        return ids

    def decode(self, token):
        piece = self.inverse.get(int(token), "")
        return piece.replace("\u0120", " ").replace("\u010a", "\n") if self.byte_level else piece
