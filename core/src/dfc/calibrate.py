"""Activation ranges, a precision plan and a fake-quantization proxy for the
exported graph (docs/quantization.md). `llm2hef calibrate OUT ...` runs this
script; it is written into every export as calibrate.py and reads
manifest.json and the files beside it.

    python3 calibrate.py --calib-chat chats.jsonl [--eval-chat held_out.jsonl] [-o quantization.json]
    (or --calib-text / --calib-tokens, --eval-text / --eval-tokens)

1. Ranges. The fp32 graph runs under onnxruntime, fed per prompt exactly what
   the genai runtime feeds (`llm2hef inputs`), one prompt at a time. For every
   activation tensor (each MatMul input, residual Add output, norm output,
   attention scores and softmax) it keeps min, max, a log-spaced histogram of
   |x| (for the 99.9th percentile) and where the extremes sit (prompt, token,
   channel). Only the prompt's real rows count: padding rows are inert.
2. Plan. A tensor an 8-bit per-tensor grid cannot carry (its 99.9th
   percentile spans fewer than --min-levels steps of the grid) gets a 16-bit
   activation mode on the layers that consume it; a weight whose 4-bit
   rounding moves the layer's output by more than --max-weight-error (an
   estimate from the calibrated input energy per channel) gets 8 bits.
   --precision-budget bounds the extra bytes.
3. Proxy. The same graph with fake quantization (onnxruntime's
   QuantizeLinear/DequantizeLinear, per-tensor activations with the
   calibrated ranges; weights rounded per output channel) for the default
   A8W4 and for the plan, on held-out prompts: logits cosine and top-1 against
   fp32 at every real position, and a greedy continuation side by side. It is
   a proxy of the DFC's quantizer, not a prediction of the chip.

Outputs: quantization.json, quantization-report.md, quantization.svg.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

# The export folder: this file's own when run as OUT/calibrate.py; `llm2hef
# calibrate` feeds the script built into it on standard input and names the
# folder with --export-dir (main() sets HERE from it).
HERE = os.path.dirname(os.path.abspath(__file__))

SCRIPT_NAME = "calibrate.py"  # how messages name this script, also in the block shared with compile.py
PROXY_LABEL = ("proxy of the DFC (fake quantization under onnxruntime), not a prediction of what the DFC "
               "or the chip will do")
DEVICE_BYTES = 8 * 2 ** 30  # the Hailo-10H's 8 GB of memory, counted as inspect counts it (8 GiB)
# The DFC's precision modes (hailo-contract.md section 7 and docs/quantization.md for the sources).
DEFAULT_MODE = "a8_w4"
SIMULATED_KINDS = ("embeddings", "conv_input", "norm", "residual")
DEFAULT_MIN_LEVELS = 32.0
FEED_CACHE_BYTES = 512 * 2 ** 20
DEFAULT_MAX_WEIGHT_DROP = 0.02
DEFAULT_MAX_ACTIVATION_DROP = 0.01

# ------------------------------------------------------------------ range statistics
# |x| histogram: log2 bins from 2^-40 to 2^40, 32 per octave (bin width 2.2 %).
# Bin 0 holds zeros and values below 2^-40; the last bin values above 2^40.
LOG2_LOW, LOG2_HIGH, BINS_PER_OCTAVE = -40, 40, 32
N_BINS = (LOG2_HIGH - LOG2_LOW) * BINS_PER_OCTAVE + 2
BIN_RATIO = 2.0 ** (1.0 / BINS_PER_OCTAVE)


def _np():
    import numpy as np
    return np


class NonFinite(ValueError):
    """A NaN or infinity in an activation: the fp32 graph overflowed or a
    weight is not finite (export warns about those, manifest.json lists them)."""

    def __init__(self, value, where):
        super().__init__("non-finite activation value %r at %s" % (value, where))
        self.value, self.where = value, where


class RangeStats:
    """Streaming statistics of one activation tensor over many prompts.

    update() takes the tensor restricted to a prompt's real tokens, with the
    token axis named; nothing of the values is kept but min, max, the |x|
    histogram, per-channel maxima and energy, and where the extremes were."""

    def __init__(self, channels=None):
        np = _np()
        self.count = 0
        self.min = math.inf
        self.max = -math.inf
        self.hist = np.zeros(N_BINS, np.int64)
        self.min_at = None
        self.max_at = None
        self.channel_max_abs = np.zeros(channels, np.float64) if channels else None
        self.channel_sum_sq = np.zeros(channels, np.float64) if channels else None
        self.channel_rows = 0

    def update(self, x, token_axis, where=None):
        """x: float array; token_axis: its token axis; where: dict added to the
        location of a new extreme (e.g. the prompt index and token ids)."""
        np = _np()
        if x.size == 0:
            return
        flat = x.reshape(-1)
        lo_i, hi_i = int(np.argmin(flat)), int(np.argmax(flat))
        lo, hi = float(flat[lo_i]), float(flat[hi_i])
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise NonFinite(lo if not math.isfinite(lo) else hi, _location(
                x.shape, lo_i if not math.isfinite(lo) else hi_i, token_axis, where))
        if lo < self.min:
            self.min, self.min_at = lo, _location(x.shape, lo_i, token_axis, where)
        if hi > self.max:
            self.max, self.max_at = hi, _location(x.shape, hi_i, token_axis, where)
        self.hist += np.bincount(_bins(np.abs(flat)), minlength=N_BINS)
        self.count += flat.size
        if self.channel_max_abs is not None:
            rows = np.abs(x.reshape(-1, x.shape[-1])).astype(np.float64)
            self.channel_max_abs = np.maximum(self.channel_max_abs, rows.max(axis=0))
            self.channel_sum_sq += (rows * rows).sum(axis=0)
            self.channel_rows += rows.shape[0]

    def add_reduced(self, r, shape, token_axis, where=None):
        """The same as update() from statistics already reduced (stats_model's
        outputs for one run, {statistic: array}); `shape` is that of the rows
        they were taken over."""
        np = _np()
        count = int(np.prod(shape))
        if count == 0:
            return
        if int(r["bad"]):
            at = int(r["bad_at"])
            raise NonFinite(float("nan"), _location(shape, at, token_axis, where))
        lo, hi = float(r["min"]), float(r["max"])
        if lo < self.min:
            self.min, self.min_at = lo, _location(shape, int(r["argmin"]), token_axis, where)
        if hi > self.max:
            self.max, self.max_at = hi, _location(shape, int(r["argmax"]), token_axis, where)
        self.hist += r["hist"].astype(np.int64)
        self.count += count
        if self.channel_max_abs is not None and "channel_max_abs" in r:
            self.channel_max_abs = np.maximum(self.channel_max_abs, r["channel_max_abs"].astype(np.float64))
            self.channel_sum_sq += r["channel_sum_sq"].astype(np.float64)
            self.channel_rows += count // shape[-1]

    def max_abs(self):
        return max(abs(self.min), abs(self.max)) if self.count else 0.0

    def percentile_abs(self, q):
        """The q-th percentile of |x| (0 < q <= 100), to one histogram bin: the
        upper edge of the bin holding it (never below the true value)."""
        if not self.count:
            return 0.0
        np = _np()
        rank = math.ceil(q / 100.0 * self.count)
        b = int(np.searchsorted(np.cumsum(self.hist), rank))
        if b == 0:
            return 2.0 ** LOG2_LOW
        return min(2.0 ** (LOG2_LOW + b / BINS_PER_OCTAVE), self.max_abs())

    def channel_mean_sq(self):
        return self.channel_sum_sq / max(self.channel_rows, 1)


def _bins(a):
    np = _np()
    out = np.zeros(a.shape, np.int64)
    nz = a >= 2.0 ** LOG2_LOW
    # bin b >= 1 holds (2^(LOW+(b-1)/k), 2^(LOW+b/k)]
    out[nz] = np.clip(np.ceil((np.log2(a[nz].astype(np.float64)) - LOG2_LOW) * BINS_PER_OCTAVE), 1, N_BINS - 1)
    return out


def _location(shape, flat_index, token_axis, where):
    np = _np()
    idx = np.unravel_index(flat_index, shape)
    loc = dict(where or {})
    loc["token"] = int(idx[token_axis])
    loc["channel"] = [int(i) for a, i in enumerate(idx) if a != token_axis and shape[a] > 1]
    ids = loc.pop("token_ids", None)
    if ids is not None:
        loc["token_id"] = int(ids[loc["token"]])
    return loc


# ------------------------------------------------------------------ the plan rule
def grid_levels(lo, hi, p999, bits):
    """How many steps of a per-tensor grid over [min(lo,0), max(hi,0)] with
    2^bits levels the 99.9th percentile of |x| spans: the resolution left to
    ordinary values once the extremes fix the range."""
    span = max(hi, 0.0) - min(lo, 0.0)
    if span <= 0.0:
        return math.inf
    return p999 / (span / (2 ** bits - 1))


def activation_bits_needed(lo, hi, p999, min_levels):
    """8 when the 8-bit grid leaves the 99.9th percentile at least min_levels
    steps, else 16 (the widest activation mode the DFC documents)."""
    return 8 if grid_levels(lo, hi, p999, 8) >= min_levels else 16


def quantize_weight(w, bits, group=None):
    """Symmetric round-to-nearest per output channel (the last axis of an ONNX
    MatMul weight [in, out]), or per output channel and per run of `group`
    input rows (the DFC's weight_group_size) when the input width is a
    multiple of it: what the proxy does for a w4/w8/w16 layer. Hailo's recipe
    writes weight_group_size=128 only; where the width is no multiple, the
    line does not apply (the DFC's behaviour there is not public) and the
    weight is quantized per output channel."""
    np = _np()
    q = 2 ** (bits - 1) - 1
    if group and w.ndim == 2 and w.shape[0] % group == 0 and w.shape[0] > group:
        g = w.reshape(w.shape[0] // group, group, w.shape[1])
        scale = np.abs(g).max(axis=1, keepdims=True) / q
        scale = np.where(scale > 0, scale, 1.0)
        return (np.clip(np.round(g / scale), -q - 1, q) * scale).reshape(w.shape).astype(np.float32)
    scale = np.abs(w).max(axis=0, keepdims=True) / q
    scale = np.where(scale > 0, scale, 1.0)
    return (np.clip(np.round(w / scale), -q - 1, q) * scale).astype(np.float32)


def weight_output_error(w, input_mean_sq, bits):
    """Relative RMS change of the layer's output when its weight is rounded to
    `bits`, estimated from the calibrated mean square of each input channel
    (channels taken as uncorrelated): sqrt(sum_i E[x_i^2] |dW_i|^2 / sum_i E[x_i^2] |W_i|^2)."""
    np = _np()
    d = w.astype(np.float64) - quantize_weight(w, bits)
    m = np.asarray(input_mean_sq, np.float64)
    num = float((m * (d * d).sum(axis=1)).sum())
    den = float((m * (w.astype(np.float64) ** 2).sum(axis=1)).sum())
    return math.sqrt(num / den) if den > 0 else 0.0


# Modes whose output is 16 bits: a tensor is carried at 16 bits only when its
# producer writes it so (a consumer at a16 alone reads what the producer gives).
SIXTEEN_BIT_OUTPUT = ("a16_w16", "a16_w4_a16", "a16_w8_a16")
# The 16-bit-input mode that keeps a conv's weights (public Hailo-10H scripts:
# a16_w4_a16 in Hailo's recipe, a16_w16 in the model zoo); a16_w8 is written
# only for Hailo-15L, so an 8-bit weight on a 16-bit input becomes a16_w16.
RAISED_INPUT = {4: "a16_w4_a16", 8: "a16_w16", 16: "a16_w16"}
RAISED_WEIGHT = {"a8_w4": "a8_w8", "a16_w4_a16": "a16_w16"}


def default_mode_of(c):
    return "a8_w4" if c["compressible"] else "a8_w8"


def line_extra_bytes(line, conv, tensors):
    """What a line adds to the default A8W4 model: one byte per activation
    value carried at 16 bits, and (bits - default bits) / 8 per weight."""
    mode = line["precision_mode"]
    extra = 0
    if conv is not None:
        if mode.startswith("a16") and conv["input"] in tensors:
            extra += int(tensors[conv["input"]]["elements"])
        default_bits = 4 if conv["compressible"] else 8
        extra += conv["weight_elements"] * max(weight_bits_of(mode) - default_bits, 0) // 8
    elif mode.startswith("a16"):
        extra += int(tensors.get(line.get("output"), {}).get("elements", 0))
    return extra


def make_plan(tensors, convs, producers, base_lines, min_levels, raised_groups=(), budget_bytes=None, wide=()):
    """The precision plan: `base_lines` (Hailo's recipe for this graph), then
    what the measurements need.

    tensors: {name: {"lo", "hi", "p999", "elements"}} for every activation tensor;
    convs: [{"onnx_node", "input", "compressible", "weight_elements", "group"}];
    producers: {tensor: {"onnx_node", "op_type"}} for the tensors whose producer
    a 16-bit mode can be written on (residual adds, products, norm outputs);
    raised_groups: weight groups that get 8-bit weights;
    wide: tensors carried at 16 bits whatever their grid (chosen by the proxy).
    An activation tensor an 8-bit grid cannot carry gets its producer and its
    consumer convs raised together (a16_w16 on the producer, an a16 mode on
    each consumer); a tensor whose producer no public mode can raise is listed
    under "unraised" and stays 8-bit, in the plan as in the proxy.
    Returns (lines, dropped, spent, unraised); each line {"onnx_node",
    "op_type", "precision_mode", "reason", "extra_bytes"[, "weight_group_size"]},
    most severe first."""
    lines = {}
    for b in base_lines:
        lines[b["onnx_node"]] = dict(b, severity=math.inf)
    conv_by_node = {c["onnx_node"]: c for c in convs}
    unraised = []

    def mode_of(c):
        return lines[c["onnx_node"]]["precision_mode"] if c["onnx_node"] in lines else default_mode_of(c)

    def put(node, op_type, mode, reason, severity, extra_fields=None):
        line = lines.get(node)
        if line is None:
            line = lines[node] = dict(onnx_node=node, op_type=op_type, reason=reason, severity=severity)
        elif reason not in line["reason"]:
            line["reason"] += "; " + reason
        line["precision_mode"] = mode
        line["severity"] = max(line["severity"], severity)
        line.update(extra_fields or {})
        if weight_bits_of(mode) != 4:
            line.pop("weight_group_size", None)

    for name, t in tensors.items():
        needed = activation_bits_needed(t["lo"], t["hi"], t["p999"], min_levels) == 16
        if not needed and name not in wide:
            continue
        lv = grid_levels(t["lo"], t["hi"], t["p999"], 8)
        why = "%s: an 8-bit grid leaves its 99.9th percentile %.2f step(s) (< %g)" % (name, lv, min_levels) \
            if needed else "%s: at 16 bits, chosen in the proxy to meet the activation floor (%.1f 8-bit steps)" % (
                name, lv)
        severity = min_levels / max(lv, 1e-12)
        p = producers.get(name)
        if p is None:
            unraised.append(dict(tensor=name, reason=why + "; its producer is no layer a public 16-bit mode is "
                                 "written on, so it stays 8-bit"))
            continue
        put(p["onnx_node"], p["op_type"], "a16_w16", "output " + why, severity, dict(output=name))
        for c in convs:
            if c["input"] == name:
                put(c["onnx_node"], "MatMul", RAISED_INPUT[weight_bits_of(mode_of(c))], "input " + why, severity)
    for c in convs:
        if c["compressible"] and c.get("group") in raised_groups:
            mode = mode_of(c)
            if weight_bits_of(mode) == 4:
                put(c["onnx_node"], "MatMul", RAISED_WEIGHT[mode], "8-bit weights for %s, chosen by cost to meet "
                    "the quality floor" % c["group"], 0.0)
    candidates = []
    for line in lines.values():
        line["extra_bytes"] = line_extra_bytes(line, conv_by_node.get(line["onnx_node"]), tensors)
        candidates.append(line)
    candidates.sort(key=lambda x: (-x["severity"], x["onnx_node"]))
    kept, dropped, spent = [], [], 0
    for c in candidates:
        if budget_bytes is not None and spent + c["extra_bytes"] > budget_bytes:
            dropped.append(c)
            continue
        spent += c["extra_bytes"]
        kept.append(c)
    for line in kept + dropped:
        line.pop("severity", None)
        line.pop("output", None)
    return kept, dropped, spent, unraised


def producers_of(tensors, residual_adds, products, model):
    """{tensor: {"onnx_node", "op_type"}} for the tensors whose producer is a
    residual Add (ew_add), a product (ew_mult) or a norm's last node
    (normalization): the layer types public Hailo scripts write a16_w16 on."""
    by_output = {n.output[0]: n for n in model.graph.node if n.output}
    out = {a["output"]: dict(onnx_node=a["onnx_node"], op_type="Add") for a in residual_adds}
    out.update({m["output"]: dict(onnx_node=m["onnx_node"], op_type="Mul") for m in products})
    for name, t in tensors.items():
        if t["kind"] == "norm" and name not in out and name in by_output:
            n = by_output[name]
            # The norm's own output: its scale (Mul) or a norm op, which the DFC
            # parses as a `normalization` layer. An intermediate that leaves a
            # norm module (QK-norm's Pow feeding its segment matmul) is not.
            if n.op_type == "Mul" or n.op_type in NORM_OPS:
                out[name] = dict(onnx_node=n.name, op_type=n.op_type)
    return out


def weight_group(onnx_node):
    """Layers of one role across the decoder (q_proj of every layer, ...): the
    unit the proxy measures 4-bit sensitivity on."""
    return re.sub(r"layers\.\d+", "layers.*", onnx_node)


# ------------------------------------------------------------------ Hailo's recipe
# Hailo's own model script for its Qwen2-1.5B-Instruct (the .alls inside the
# qwen2_1.5b_instruct.q.har Hailo publishes; a copy: l-nmch/hailo-10h-llm-compiler,
# recipes/hailo-qwen2-1.5b-instruct.alls), by role: every residual ew_add and the
# SwiGLU product ew_mult at a16_w16; down_proj (the conv fed by that product)
# at a16_w4_a16; the other block convs at a8_w4 with weight_group_size=128;
# input_layer1 at a16_w16; the lm_head (its shards conv225_d0..d3) at a8_w4
# with no group line. Roles are read from the graph, never from names.
RECIPE_GROUP_SIZE = 128
ACTIVATION_OPS = ("Gelu", "Relu", "Sigmoid", "Tanh", "Erf", "FastGelu", "BiasGelu")


def graph_roles(model, convs):
    """({conv onnx_node: "down_proj" | "lm_head" | "block"}, products): a
    down_proj is a conv fed by an elementwise product of two computed tensors
    (SwiGLU, GeGLU, LFM2's gated convolution) or by an activation (the MLPs
    without a gate); each such product is [{"onnx_node", "output", "conv"}]
    (an ew_mult on the DFC's side). An lm_head is a conv from which a graph
    output is reached without another conv."""
    g = model.graph
    constants = {i.name for i in g.initializer} | {o for n in g.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in g.node for o in n.output}
    conv_by_node = {c["onnx_node"]: c for c in convs}
    heads, seen, todo = set(), set(), [o.name for o in g.output]
    while todo:
        name = todo.pop()
        n = producer.get(name)
        if n is None or n.name in seen:
            continue
        seen.add(n.name)
        if n.name in conv_by_node:
            heads.add(n.name)
            continue
        todo.extend(i for i in n.input if i and i not in constants)
    roles, products = {}, []
    for c in convs:
        p = producer.get(c["input"])
        if c["onnx_node"] in heads:
            roles[c["onnx_node"]] = "lm_head"
        elif p is not None and p.op_type == "Mul" and all(i not in constants for i in p.input):
            roles[c["onnx_node"]] = "down_proj"
            products.append(dict(onnx_node=p.name, output=p.output[0], conv=c["onnx_node"]))
        elif p is not None and p.op_type in ACTIVATION_OPS:
            roles[c["onnx_node"]] = "down_proj"
        else:
            roles[c["onnx_node"]] = "block"
    return roles, products


def weight_bits_of(mode):
    return int(re.match(r"a\d+_w(\d+)", mode).group(1))


def group_size_for(c):
    """RECIPE_GROUP_SIZE where the conv's input width is a multiple of it, else None."""
    rows = c.get("rows")
    return RECIPE_GROUP_SIZE if rows and rows % RECIPE_GROUP_SIZE == 0 and rows > RECIPE_GROUP_SIZE else None


def recipe_lines(convs, residual_adds, products, roles, tensors):
    """Hailo's recipe as plan lines for this graph (the cost of each line
    counted against the default A8W4, as every line's extra_bytes is)."""
    lines = []
    for a in residual_adds:
        lines.append(dict(onnx_node=a["onnx_node"], op_type="Add", precision_mode="a16_w16", output=a["output"],
                          reason="Hailo's recipe: residual ew_add at a16_w16",
                          extra_bytes=int(tensors[a["output"]]["elements"]) if a["output"] in tensors else 0))
    for m in products:
        lines.append(dict(onnx_node=m["onnx_node"], op_type="Mul", precision_mode="a16_w16", output=m["output"],
                          reason="Hailo's recipe: the product feeding down_proj (ew_mult) at a16_w16",
                          extra_bytes=int(tensors[m["output"]]["elements"]) if m["output"] in tensors else 0))
    for c in convs:
        if not c["compressible"]:
            continue
        role, gs = roles.get(c["onnx_node"]), group_size_for(c)
        line = None
        if role == "down_proj":
            line = dict(precision_mode="a16_w4_a16", reason="Hailo's recipe: down_proj at a16_w4_a16",
                        extra_bytes=int(tensors[c["input"]]["elements"]) if c["input"] in tensors else 0)
        elif gs and role != "lm_head":
            line = dict(precision_mode="a8_w4", reason="Hailo's recipe: block conv at a8_w4", extra_bytes=0)
        if line is None:
            continue
        line.update(onnx_node=c["onnx_node"], op_type="MatMul")
        if gs and weight_bits_of(line["precision_mode"]) == 4:
            line["weight_group_size"] = gs
            line["reason"] += " with weight_group_size=%d" % gs
        lines.append(line)
    return lines


# ------------------------------------------------------------------ the graph
NORM_OPS = ("LayerNormalization", "SimplifiedLayerNormalization", "RMSNormalization")
PASS_THROUGH = ("Reshape", "Transpose", "Slice", "Squeeze", "Unsqueeze", "Flatten")


def module_of(node_name):
    return node_name.rsplit("/", 1)[0]


def layer_of(name):
    m = re.search(r"layers\.(\d+)", name)
    return int(m.group(1)) if m else None


def analyse_graph(model, embeddings_input):
    """Which tensors to record, what each is, and the layers that consume it."""
    g = model.graph
    constants = {i.name for i in g.initializer}
    constants |= {o for n in g.node if n.op_type == "Constant" for o in n.output}
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    tensors = {}

    def add(name, kind):
        if name in constants or not name:
            return
        if name not in tensors:
            p = producer.get(name)
            tensors[name] = dict(name=name, kind=kind, producer=p.name if p else None,
                                 producer_op=p.op_type if p else "input", layer=layer_of(p.name if p else name))

    convs, stream, residual_adds, softmaxes = [], {embeddings_input}, [], []
    for n in g.node:
        if n.op_type == "MatMul":
            a, b = n.input[0], n.input[1]
            if b in constants and a not in constants:
                add(a, "conv_input")
                convs.append(dict(onnx_node=n.name, input=a, output=n.output[0], weight=b))
            elif a not in constants and b not in constants:
                add(a, "attention")
                add(b, "attention")
                if any(c.op_type in ("Div", "Mul", "Add", "Softmax") for c in consumers.get(n.output[0], [])):
                    add(n.output[0], "scores")
        elif n.op_type == "Add" and all(i not in constants for i in n.input) and any(i in stream for i in n.input):
            stream.add(n.output[0])
            add(n.output[0], "residual")
            residual_adds.append(dict(onnx_node=n.name, output=n.output[0]))
        elif n.op_type in ("Mul", "Div") and n.input[0] in stream and n.input[1] in constants:
            stream.add(n.output[0])  # a scaled embedding (Granite, Gemma) is still the stream
        elif n.op_type == "Softmax":
            add(n.input[0], "masked_scores")
            softmaxes.append(n.name)
            tensors.pop(n.output[0], None)
            add(n.output[0], "softmax")
    # Norm outputs: a normalization op's, or what leaves a module whose name says norm (names are
    # hierarchical by contract: /model/layers.3/input_layernorm/Mul_1).
    for n in g.node:
        if n.op_type in NORM_OPS:
            add(n.output[0], "norm")
            tensors[n.output[0]]["kind"] = "norm"
            continue
        mod = module_of(n.name)
        if "norm" not in mod.rsplit("/", 1)[-1]:
            continue
        for o in n.output:
            if any(module_of(c.name) != mod for c in consumers.get(o, [])):
                if o in tensors:
                    tensors[o]["kind"] = "norm"
                else:
                    add(o, "norm")
    # The lm_head reads a Slice (the last position) of the final hidden states: record those.
    for c in convs:
        p = producer.get(c["input"])
        if p is not None and p.op_type == "Slice" and p.input[0] not in constants and p.input[0] not in tensors:
            add(p.input[0], "norm")
    # The input of pass-through ops (Slice of the last position) already carries the values.
    for name, t in tensors.items():
        p = producer.get(name)
        t["pass_through_of"] = p.input[0] if (p is not None and p.op_type in PASS_THROUGH and
                                               p.input[0] in tensors) else None
        t["consumers"] = [c.name for c in consumers.get(name, [])]
    if embeddings_input in tensors:
        tensors[embeddings_input]["kind"] = "embeddings"
    return tensors, convs, residual_adds


FIRST_ROW_INPUT = "llm2hef_calibrate_first_row"


def all_positions(model):
    """A copy of the graph whose logits cover every row from a new int64
    input FIRST_ROW_INPUT on, instead of the last position only: the
    last-position Slices that feed the lm_head start there. The ops after the
    lm_head (bias, soft-capping) are position-wise, so they follow. None when
    the graph has no such Slice."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    seq = next(d.dim_value for i in g.input for d in i.type.tensor_type.shape.dim[1:2]) if g.input else 0

    def last_position(n):
        if n.op_type != "Slice" or len(n.input) < 3 or n.input[1] not in inits or n.input[2] not in inits:
            return False
        if inits[n.input[1]].data_location == onnx.TensorProto.EXTERNAL:
            return False
        starts, ends = numpy_helper.to_array(inits[n.input[1]]), numpy_helper.to_array(inits[n.input[2]])
        return starts.size == 1 and int(starts[0]) in (seq - 1, -1) and int(ends[0]) >= seq and any(
            c.op_type == "MatMul" and c.input[0] == n.output[0] and c.input[1] in inits
            for c in consumers.get(n.output[0], []))

    slices = [n for n in g.node if last_position(n)]
    if not slices:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(model)
    by_name = {n.name: n for n in m.graph.node}
    for n in slices:
        by_name[n.name].input[1] = FIRST_ROW_INPUT
    m.graph.input.append(helper.make_tensor_value_info(FIRST_ROW_INPUT, TensorProto.INT64, [1]))
    del m.graph.value_info[:]  # the stored shapes say one row; onnxruntime infers the rest
    for o in m.graph.output:
        shape = o.type.tensor_type.shape
        if len(shape.dim) >= 2:
            shape.dim[-2].ClearField("dim_value")
            shape.dim[-2].dim_param = "rows"
    return m


def insert_after_producers(graph, added):
    """Puts the nodes added for each tensor ({tensor: [nodes]}) right after the
    node that makes it (first, for a graph input), keeping the graph's order."""
    inputs = {i.name for i in graph.input}
    ordered = [nd for name, nodes in added.items() if name in inputs for nd in nodes]
    for n in graph.node:
        ordered.append(n)
        for out in n.output:
            ordered.extend(added.get(out, []))
    del graph.node[:]
    graph.node.extend(ordered)


def stats_model(model, tensors):
    """A copy of the graph whose outputs are the statistics of every recorded
    tensor, reduced inside the graph, instead of the tensors themselves: the
    attention scores of one layer alone are [heads, S, S] (151 MB at cache
    2048 with 9 heads), and fetching them all made one prompt cost 18 GB at
    cache 2048 (issue 39). What comes back is a few numbers and a histogram
    per tensor, and onnxruntime frees each big tensor once its statistics are
    taken. Only the prompt's real rows count: each tensor is sliced along its
    token axis from the new int64 input FIRST_ROW_INPUT on.

    Returns the model and {tensor: {statistic: output name}}. The histogram
    uses RangeStats' bins (bin 0: |x| below 2^LOG2_LOW; bin b holds
    (2^(LOW+(b-1)/k), 2^(LOW+b/k)]), computed in float32 here where numpy
    used float64: a value within about 1e-7 of a bin edge may land in the
    neighbouring bin, 2.2 % apart."""
    import onnx
    from onnx import TensorProto, helper
    np = _np()
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    del g.output[:]
    del g.value_info[:]
    g.input.append(helper.make_tensor_value_info(FIRST_ROW_INPUT, TensorProto.INT64, [1]))
    consts = dict(
        st_minus1=np.array([-1], np.int64), st_inv_ln2=np.array(1.0 / math.log(2.0), np.float32),
        st_low=np.array(LOG2_LOW, np.float32), st_per_octave=np.array(BINS_PER_OCTAVE, np.float32),
        st_one_f=np.array(1.0, np.float32), st_top_f=np.array(N_BINS - 1, np.float32),
        st_floor=np.array(2.0 ** LOG2_LOW, np.float32), st_zero_f=np.array(0.0, np.float32),
        st_hist0=np.zeros(N_BINS, np.int32), st_one_i=np.array(1, np.int32))
    for name, value in consts.items():
        g.initializer.append(onnx.numpy_helper.from_array(value, name))
    outputs, produced = {}, {}
    for k, (name, t) in enumerate(tensors.items()):
        shape, axis = t["shape"], t["token_axis"]
        p = "st%d_" % k

        def node(op, inputs, suffix, **attrs):
            out = p + suffix
            produced.setdefault(name, []).append(helper.make_node(op, inputs, [out], name=p + "/" + suffix, **attrs))
            return out

        ends, axes = p + "ends", p + "axes"
        g.initializer.append(onnx.numpy_helper.from_array(np.array([shape[axis]], np.int64), ends))
        g.initializer.append(onnx.numpy_helper.from_array(np.array([axis], np.int64), axes))
        rows = node("Slice", [name, FIRST_ROW_INPUT, ends, axes], "rows")
        flat = node("Reshape", [rows, "st_minus1"], "flat")
        o = dict(min=node("ReduceMin", [flat], "min", keepdims=0), max=node("ReduceMax", [flat], "max", keepdims=0),
                 argmin=node("ArgMin", [flat], "argmin", axis=0, keepdims=0),
                 argmax=node("ArgMax", [flat], "argmax", axis=0, keepdims=0))
        # x - x is NaN exactly where x is NaN or infinite.
        bad = node("Cast", [node("IsNaN", [node("Sub", [flat, flat], "diff")], "isnan")], "bad", to=TensorProto.INT32)
        o["bad"] = node("ReduceMax", [bad], "bad_any", keepdims=0)
        o["bad_at"] = node("ArgMax", [bad], "bad_at", axis=0, keepdims=0)
        mag = node("Abs", [flat], "abs")
        level = node("Mul", [node("Sub", [node("Mul", [node("Log", [mag], "log"), "st_inv_ln2"], "log2"), "st_low"],
                                  "shifted"), "st_per_octave"], "level")
        binf = node("Clip", [node("Ceil", [level], "ceil"), "st_one_f", "st_top_f"], "clipped")
        binf = node("Where", [node("GreaterOrEqual", [mag, "st_floor"], "nonzero"), binf, "st_zero_f"], "binf")
        index = node("Cast", [binf], "bin", to=TensorProto.INT32)
        ones = node("Expand", ["st_one_i", node("Shape", [index], "count")], "ones")
        o["hist"] = node("ScatterElements", ["st_hist0", index, ones], "hist", axis=0, reduction="add")
        if axis == len(shape) - 2:
            g.initializer.append(onnx.numpy_helper.from_array(np.array([-1, shape[-1]], np.int64), p + "by_channel"))
            o["channel_max_abs"] = node("ReduceMax", [node("Reshape", [mag, p + "by_channel"], "mag_rows")],
                                        "channel_max", axes=[0], keepdims=0)
            o["channel_sum_sq"] = node("ReduceSumSquare", [node("Reshape", [flat, p + "by_channel"], "flat_rows")],
                                       "channel_sum_sq", axes=[0], keepdims=0)
        outputs[name] = o
    # Each tensor's statistics right after the node that makes it, and the
    # outputs in that order: the big tensors can then be freed one by one.
    insert_after_producers(g, produced)
    types = dict(min=TensorProto.FLOAT, max=TensorProto.FLOAT, argmin=TensorProto.INT64, argmax=TensorProto.INT64,
                 bad=TensorProto.INT32, bad_at=TensorProto.INT64, hist=TensorProto.INT32,
                 channel_max_abs=TensorProto.FLOAT, channel_sum_sq=TensorProto.FLOAT)
    for name, t in tensors.items():
        shapes = dict(hist=[N_BINS], channel_max_abs=[t["shape"][-1]], channel_sum_sq=[t["shape"][-1]])
        for stat, out in outputs[name].items():
            g.output.append(helper.make_tensor_value_info(out, types[stat], shapes.get(stat, [])))
    return m, outputs


def token_axis_of(shape, seq):
    for a in range(len(shape) - 2, -1, -1):
        if shape[a] == seq:
            return a
    return len(shape) - 1 if shape and shape[-1] == seq else None


# ------------------------------------------------------------------ running
class Feeder:
    """Runtime-equivalent inputs for a prompt, from `llm2hef inputs` (the C++
    code that builds the DFC's calibration set too)."""

    def __init__(self, exe, export_dir, input_names, workdir):
        self.exe, self.export_dir, self.input_names = exe, export_dir, input_names
        self.workdir, self.calls = workdir, 0

    def __call__(self, tokens):
        np = _np()
        self.calls += 1
        path = os.path.join(self.workdir, "inputs%d.npz" % self.calls)
        try:
            r = subprocess.run([self.exe, "inputs", self.export_dir, "--tokens", ",".join(map(str, tokens)), "-o",
                                path], capture_output=True, text=True)
        except OSError as e:
            fail("cannot run `%s inputs`: %s" % (self.exe, e))
        if r.returncode != 0:
            fail("`llm2hef inputs` failed (status %d): %s" % (r.returncode, r.stderr.strip()[-2000:]))
        with np.load(path) as z:
            feeds = {k: z[k] for k in self.input_names}
        os.remove(path)
        return feeds


SESSION_THREADS = 0  # onnxruntime's intra-op threads; 0: one per core (--threads)


def session(model_bytes, export_dir, initializers=None):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = SESSION_THREADS
    # No arena: the arena keeps the largest set of intermediates a run ever
    # had (the [heads, S, S] scores and softmax of several layers at cache
    # 2048) for the session's life; without it each is freed when its last
    # consumer has run, and the peak is what one run needs at one time.
    so.enable_cpu_mem_arena = False
    so.enable_mem_pattern = False
    # Priority-based order runs each tensor's statistics right after it is made; the
    # default order ran them all at the end with every big tensor still alive
    # (SmolLM2 at cache 2048: 15.0 GiB against 1.6 GiB, measured).
    so.execution_order = ort.ExecutionOrder.PRIORITY_BASED
    # The copy of the graph is handed over in memory; its weights stay in OUT/model.onnx.data.
    so.add_session_config_entry("session.model_external_initializers_file_folder_path", export_dir)
    keep = []
    for name, arr in (initializers or {}).items():
        v = ort.OrtValue.ortvalue_from_numpy(arr)
        keep.append(v)
        so.add_initializer(name, v)
    s = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    s._llm2hef_keep = keep  # the OrtValues must outlive the session
    return s


def with_outputs(model, names):
    import onnx
    from onnx import TensorProto, helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    return m


def shapes_of(model):
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        dims = [d.dim_value if d.HasField("dim_value") else None for d in vi.type.tensor_type.shape.dim]
        if dims and all(d is not None for d in dims):
            out[vi.name] = dims
    return out


def fail(msg):
    sys.exit("calibrate.py: " + msg)


def say(msg):
    print("calibrate.py: " + msg, flush=True)


# ------------------------------------------------------------------ memory
# The peak the run will reach, estimated before anything runs from the
# graph's shapes (docs/benchmarks.md, "Calibrate", has the measurements these
# factors come from): the interpreter with numpy, onnx and onnxruntime loaded;
# the fp32 weights, once for the statistics session and WEIGHT_COPIES_PROXY
# times while the proxy runs (the session's fp32 weights and the 4/8-bit
# copies handed to it); one prompt's inputs, held by the feeder and the
# proxy's cache; and the intermediates of one run, TRANSIENT_FACTOR times the
# largest activation (the [heads, S, S] scores: scores, masked scores,
# softmax and their statistics live at once).
BASE_BYTES = 400 * 2 ** 20
WEIGHT_COPIES_RANGES = 1.25
WEIGHT_COPIES_PROXY = 2.4
TRANSIENT_FACTOR = 5


def available_memory():
    """MemAvailable from /proc/meminfo, in bytes; None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def estimate_peak(manifest, tensors, simulate):
    """{part: bytes} of the run's estimated peak, and their sum under "total"."""
    np = _np()
    data = os.path.join(HERE, "model.onnx.data")
    weights = os.path.getsize(data) if os.path.exists(data) else 0
    inputs = sum(4 * int(np.prod(i["shape"])) for i in manifest["inputs"])
    largest = max((4 * int(np.prod(t["shape"])) for t in tensors.values()), default=0)
    parts = dict(interpreter=BASE_BYTES,
                 weights=int(weights * (WEIGHT_COPIES_PROXY if simulate else WEIGHT_COPIES_RANGES)),
                 inputs=2 * inputs + (FEED_CACHE_BYTES if simulate else 0),
                 intermediates=TRANSIENT_FACTOR * largest)
    parts["total"] = sum(parts.values())
    return parts


def check_memory(parts, limit, limit_given):
    gib = 2.0 ** 30
    say("memory: about %.2f GiB at peak (weights %.2f, intermediates %.2f, inputs %.2f, interpreter %.2f), %s %.2f GiB"
        % (parts["total"] / gib, parts["weights"] / gib, parts["intermediates"] / gib, parts["inputs"] / gib,
           parts["interpreter"] / gib, "limit" if limit_given else "available", limit / gib))
    if parts["total"] > limit:
        fail("refused before running: this run needs about %.2f GiB and %s %.2f GiB (--memory-limit). The "
             "intermediates grow with the square of the cache (%.2f GiB here): export with a smaller --cache, or "
             "run on a machine with more memory; --no-simulate drops the proxy's copies of the weights."
             % (parts["total"] / gib, "the limit is" if limit_given else "the machine has", limit / gib,
                parts["intermediates"] / gib))


class Progress:
    """Steps done, rate and time left: a bar redrawn in place on a terminal
    (stderr), a line per step otherwise (stdout, for logs)."""

    def __init__(self, what, total, unit):
        self.what, self.total, self.unit = what, total, unit
        self.done_steps, self.start = 0, time.time()
        self.tty = sys.stderr.isatty()

    def step(self, note=""):
        self.done_steps += 1
        spent = time.time() - self.start
        rate = spent / self.done_steps
        left = rate * (self.total - self.done_steps)
        text = "%s %d/%d, %.1f s per %s, %s left" % (self.unit, self.done_steps, self.total, rate, self.unit,
                                                      _duration(left))
        if self.tty:
            width = 24
            filled = width * self.done_steps // max(self.total, 1)
            sys.stderr.write("\r%s [%s%s] %s " % (self.what, "#" * filled, "." * (width - filled), text))
            sys.stderr.flush()
        else:
            say("  %s%s" % (text, " (%s)" % note if note else ""))

    def done(self):
        if self.tty and self.done_steps:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self.tty = False


def _duration(seconds):
    seconds = int(round(seconds))
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60) if seconds >= 3600 else \
        "%dm%02ds" % (seconds // 60, seconds % 60) if seconds >= 60 else "%ds" % seconds


# ------------------------------------------------------------------ inputs
# @CALIBRATION_PROMPTS@ begin: the prompt files of calibrate.py and compile.py, one rule for both.
# compile.py gets this block as it stands here (core/src/dfc/compile_driver.cpp); it reads only
# SCRIPT_NAME from the script around it. docs/quantization.md, "Prompts".
BAD_INPUT_STATUS = 3  # llm2hef's exit status for bad input, a missing tool or package included
MAX_PROMPT_FILE_BYTES = 16 * 2 ** 20  # as `llm2hef calibrate` bounds a token-id file
PIP_NAMES = {"jinja2": "jinja2", "tokenizers": "tokenizers", "numpy": "numpy", "onnx": "onnx",
             "onnxruntime": "onnxruntime"}


def bad_input(msg):
    sys.stderr.write("%s: %s\n" % (SCRIPT_NAME, msg))
    sys.exit(BAD_INPUT_STATUS)


def warn(msg):
    sys.stderr.write("%s: warning: %s\n" % (SCRIPT_NAME, msg))


def install_hint(missing):
    """The command that installs `missing` into this Python, or into a new
    virtual environment where pip may not install into it (PEP 668: an
    EXTERNALLY-MANAGED file in the standard library's folder, outside a
    virtual environment)."""
    import importlib.util
    import sysconfig
    packages = " ".join(PIP_NAMES.get(m, m) for m in missing)
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
    if not in_venv and os.path.isfile(marker):
        venv = "~/llm2hef-venv"
        return ("This Python (%s) is externally managed (PEP 668), so pip will not install into it; make a virtual "
                "environment: %s`%s -m venv %s && %s/bin/pip install %s`, then run with %s/bin/python"
                % (sys.executable, "" if importlib.util.find_spec("ensurepip") else
                   "`sudo apt-get install python3-venv` (Debian), then ", sys.executable, venv, venv, packages, venv))
    return "Install them with `%s -m pip install %s`" % (sys.executable, packages)


def require_modules(modules, why):
    """Stops (exit 3) naming only the modules of `modules` this Python lacks."""
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        bad_input("%s needs the Python package(s) %s, missing here. %s" % (why, ", ".join(missing),
                                                                          install_hint(missing)))


def read_prompt_file(path, option):
    """The file's text: a regular file of at most MAX_PROMPT_FILE_BYTES, UTF-8."""
    if not os.path.isfile(path):
        bad_input("%s %s: no such file" % (option, path))
    size = os.path.getsize(path)
    if size > MAX_PROMPT_FILE_BYTES:
        bad_input("%s %s: %d bytes exceed the limit of %d bytes (16 MiB) for a prompt file"
                  % (option, path, size, MAX_PROMPT_FILE_BYTES))
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except OSError as e:
        bad_input("%s %s: cannot read it (%s)" % (option, path, e))
    except UnicodeDecodeError as e:
        bad_input("%s %s: not UTF-8 text (byte %d: %s)" % (option, path, e.start, e.reason))


def export_tokenizer(export_dir, why):
    require_modules(["tokenizers"], why)
    from tokenizers import Tokenizer
    return Tokenizer.from_file(os.path.join(export_dir, "resources", "tokenizer.json"))


def encode(tokenizer, text):
    """Token ids as the runtime gets them: hailort's server tokenizes the text
    it is given without the tokenizer's post-processor, so no BOS is added;
    a model that needs one has it at the start of the exported chat template
    (hailo-contract.md section 6, "Tokenizer")."""
    return tokenizer.encode(text, add_special_tokens=False).ids


def genai_renderer(export_dir):
    """render(messages) -> the text genai gives the model for a first turn:
    the exported chat template (resources/hailo-config.json) rendered with
    bos_token and eos_token empty and add_generation_prompt true, as hailort
    renders a list of messages (hailo-contract.md section 6, "The load
    probe"; docs/chat-templates.md). jinja2 is set up as minja parses:
    trim_blocks, lstrip_blocks, loop controls, raise_exception, strftime_now,
    a tojson that keeps non-ASCII text; and string content goes in as
    [{"type": "text", "text": ...}] to a template that renders only that form,
    as minja does."""
    require_modules(["jinja2"], "rendering conversations through the chat template")
    import time

    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    path = os.path.join(export_dir, "resources", "hailo-config.json")
    try:
        with open(path, encoding="utf-8") as f:
            template = json.load(f).get("chat_template")
    except (OSError, ValueError) as e:
        bad_input("%s: not readable (%s); re-run `llm2hef export`" % (path, e))
    if not isinstance(template, str):
        bad_input("%s: chat_template is missing or not a string; re-run `llm2hef export`" % path)

    class Raised(Exception):
        pass

    def raise_exception(message):
        raise Raised(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = time.strftime
    try:
        compiled = env.from_string(template)
    except jinja2.TemplateError as e:
        bad_input("%s: chat_template does not parse: %s" % (path, e))

    def plain(messages, add_generation_prompt):
        return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt, bos_token="",
                               eos_token="")

    def shows(messages):
        try:
            return "<User Needle>" in plain(messages, False)
        except Exception:  # noqa: BLE001 - a template may raise anything on a probe
            return False

    typed = (not shows([{"role": "user", "content": "<User Needle>"}])
             and shows([{"role": "user", "content": [{"type": "text", "text": "<User Needle>"}]}]))

    def render(messages):
        if typed:
            messages = [dict(m, content=[{"type": "text", "text": m["content"]}]) for m in messages]
        try:
            return plain(messages, True)
        except Raised as e:
            raise ValueError("the chat template (%s) refuses it: raise_exception(%r)" % (path, str(e))) from None
        except Exception as e:  # noqa: BLE001 - jinja2's errors and what a template's Python raises
            raise ValueError("the chat template (%s) fails on it: %s: %s" % (path, type(e).__name__, e)) from None
    return render


def _type_name(value):
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def check_conversation(value, where):
    """A conversation as JSON gives it: a non-empty list of {"role": str,
    "content": str} (other keys are passed to the template as they are)."""
    if not isinstance(value, list) or not value:
        bad_input("%s: expected a conversation, a non-empty JSON list of messages {\"role\": ..., \"content\": "
                  "...}, found %s" % (where, "an empty list" if value == [] else _type_name(value)))
    for i, m in enumerate(value, 1):
        if not isinstance(m, dict):
            bad_input("%s: message %d is %s, not an object with \"role\" and \"content\"" % (where, i,
                                                                                             _type_name(m)))
        for field in ("role", "content"):
            if field not in m:
                bad_input("%s: message %d: field '%s' is missing" % (where, i, field))
            if not isinstance(m[field], str):
                bad_input("%s: message %d: field '%s' is %s, not a string" % (where, i, field, _type_name(m[field])))


def chat_prompts(path, option, export_dir, seq):
    """JSON lines, one conversation each, rendered as genai renders a first
    turn and tokenized as its server tokenizes (encode()). A line that does
    not parse, is not a conversation, or that the template refuses stops the
    run naming FILE:LINE and the field; blank lines are skipped. A
    conversation longer than the cache cannot be a prompt: it is left out,
    and the lines left out are named."""
    text = read_prompt_file(path, option)
    render = genai_renderer(export_dir)
    tokenizer = export_tokenizer(export_dir, option)
    seqs, too_long = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = "%s %s:%d" % (option, path, number)
        try:
            conversation = json.loads(line)
        except ValueError as e:
            bad_input("%s: not valid JSON (%s)" % (where, e))
        check_conversation(conversation, where)
        try:
            ids = encode(tokenizer, render(conversation))
        except ValueError as e:
            bad_input("%s: %s" % (where, e))
        if len(ids) > seq:
            too_long.append((number, len(ids)))
        elif ids:
            seqs.append(ids)
    if too_long:
        warn("%s %s: %d conversation(s) left out: longer than the cache of %d tokens once rendered (line %s)"
             % (option, path, len(too_long), seq, ", ".join("%d: %d tokens" % t for t in too_long[:10])
                + (", ..." if len(too_long) > 10 else "")))
    if not seqs:
        bad_input("%s %s: no conversation that fits the cache of %d tokens" % (option, path, seq))
    return seqs, dict(format="chat", unit="conversation(s)", lines="line(s)")


def text_prompts(path, option, export_dir, seq):
    """A plain text, tokenized as the runtime tokenizes a raw prompt (no BOS)
    and cut into prompts of the cache size; the tail, when shorter, is the
    last prompt, never dropped."""
    text = read_prompt_file(path, option)
    ids = encode(export_tokenizer(export_dir, option), text)
    if not ids:
        bad_input("%s %s: the text tokenizes to nothing" % (option, path))
    seqs = [ids[i:i + seq] for i in range(0, len(ids), seq)]
    if len(seqs) > 1 and len(seqs[-1]) < seq:
        say("%s: %d token(s) cut into %d prompt(s) of %d and a last one of %d (the tail)"
            % (option, len(ids), len(seqs) - 1, seq, len(seqs[-1])))
    return seqs, dict(format="text", unit="prompt(s)", tokens=len(ids), chars_per_token=len(text) / len(ids))


def token_prompts(path, option, vocab, seq):
    """A JSON list of token-id lists; a sequence longer than the cache is cut
    to it, and the cut is said."""
    try:
        seqs = json.loads(read_prompt_file(path, option))
    except ValueError as e:
        bad_input("%s %s: not valid JSON (%s)" % (option, path, e))
    if not isinstance(seqs, list) or not all(isinstance(s, list) for s in seqs):
        bad_input("%s %s: expected a JSON list of token-id lists" % (option, path))
    for i, s in enumerate(seqs):
        for t in s:
            if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < vocab:
                bad_input("%s %s: sequence %d holds %r, not a token id in [0, %d)" % (option, path, i, t, vocab))
    long = sum(len(s) > seq for s in seqs)
    if long:
        warn("%s %s: %d sequence(s) longer than the cache cut to its %d tokens" % (option, path, long, seq))
    seqs = [s[:seq] for s in seqs if s]
    if not seqs:
        bad_input("%s %s: no token sequences" % (option, path))
    return seqs, dict(format="tokens", unit="sequence(s)")


def read_prompts(sources, export_dir, seq, vocab):
    """(sequences, what they are) from the one option of `sources` that is set,
    {option: path} over --*-tokens, --*-text and --*-chat."""
    for option, path in sources.items():
        if not path:
            continue
        if option.endswith("-chat"):
            seqs, info = chat_prompts(path, option, export_dir, seq)
        elif option.endswith("-text"):
            seqs, info = text_prompts(path, option, export_dir, seq)
        else:
            seqs, info = token_prompts(path, option, vocab, seq)
        info.update(option=option, path=path)
        return seqs, info
    return None, None


def take_prompts(seqs, info, size, explicit, seq):
    """(the first `size` sequences, the rest). Fewer than an explicit --calib-size
    is bad input, and a default not met a warning; either says how much more
    input the count needs."""
    if size is None or len(seqs) >= size:
        if size is not None and len(seqs) > size:
            say("%s %s: the first %d of %d %s calibrate (--calib-size %d)"
                % (info["option"], info["path"], size, len(seqs), info["unit"], size))
        return seqs[:size], seqs[size:] if size is not None else []
    short = size - len(seqs)
    if info["format"] == "text":
        more = size * seq - info["tokens"]
        need = "%d more token(s), some %d more characters of text like it" % (
            more, int(more * info["chars_per_token"] + 0.999))
    else:
        need = "%d more %s" % (short, info["unit"])
    what = "%s %s gives %d %s of the %d %s" % (info["option"], info["path"], len(seqs), info["unit"], size,
                                               "asked for (--calib-size)" if explicit else "calibration takes by "
                                               "default (--calib-size)")
    if explicit:
        bad_input("%s: it needs %s, or a smaller --calib-size" % (what, need))
    warn("%s: calibrating on %d; %s would give the %d" % (what, len(seqs), need, size))
    return seqs, []
# @CALIBRATION_PROMPTS@ end


def decoder():
    try:
        from tokenizers import Tokenizer
        tok = Tokenizer.from_file(os.path.join(HERE, "resources", "tokenizer.json"))
        return lambda ids: tok.decode(list(ids), skip_special_tokens=False)
    except Exception:  # no tokenizers package, or a tokenizer it cannot read: ids only
        return None


# ------------------------------------------------------------------ the proxy
def fake_quant_model(model, quantized):
    """A copy of the graph where each tensor in `quantized` ({name: (lo, hi, bits)})
    goes through QuantizeLinear/DequantizeLinear (per tensor, asymmetric, zero
    exactly representable) before any consumer sees it."""
    import onnx
    from onnx import TensorProto, helper
    np = _np()
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    renames = {}
    new_nodes, inits = [], []
    for i, (name, (lo, hi, bits)) in enumerate(sorted(quantized.items())):
        lo, hi = min(lo, 0.0), max(hi, 0.0)
        levels = 2 ** bits - 1
        scale = (hi - lo) / levels if hi > lo else 1.0
        zp = int(np.clip(round(-lo / scale), 0, levels))
        dtype = TensorProto.UINT8 if bits == 8 else TensorProto.UINT16
        s_name, z_name, q_name, d_name = ("fq%d_scale" % i, "fq%d_zp" % i, "fq%d_q" % i, name + "__fq")
        inits += [helper.make_tensor(s_name, TensorProto.FLOAT, [], [scale]),
                  helper.make_tensor(z_name, dtype, [], [zp])]
        new_nodes.append((name, [helper.make_node("QuantizeLinear", [name, s_name, z_name], [q_name],
                                                  name="fq%d/Quantize" % i, domain="com.microsoft"),
                                 helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [d_name],
                                                  name="fq%d/Dequantize" % i, domain="com.microsoft")]))
        renames[name] = d_name
    for n in g.node:
        for k, inp in enumerate(n.input):
            if inp in renames:
                n.input[k] = renames[inp]
    insert_after_producers(g, dict(new_nodes))
    g.initializer.extend(inits)
    if not any(op.domain == "com.microsoft" for op in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def cosine(a, b):
    np = _np()
    a, b = a.astype(np.float64), b.astype(np.float64)
    d = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / d) if d > 0 else 0.0


# ------------------------------------------------------------------ report
def write_atomic(path, data):
    """Writes `path` whole or not at all, through a temporary file that is
    created exclusively beside it (never a fixed name: a file or a link planted
    under that name is neither consumed nor followed) and renamed into place."""
    folder, name = os.path.split(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + name + ".tmp-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.remove(tmp)
        raise


def svg_picture(ranges, plan_nodes, residual_outputs, min_levels, n_layers, recipe_nodes=()):
    """Per layer, max|x| / p99.9 of the residual stream and of each layer's
    worst conv input (log scale), against the widest ratio 8 bits resolve at
    --min-levels and the widest 16 bits resolve: the default A8W4 carries what
    lies under the 8-bit line; the plan lifts the filled marks to 16 bits."""
    width, height, left, right, top, bottom = 760, 380, 70, 190, 40, 50
    lim8, lim16 = 255.0 / min_levels, 65535.0 / min_levels
    series = {"residual stream": {}, "conv inputs (worst)": {}}
    for r in ranges:
        if r["layer"] is None or r["p999_abs"] <= 0:
            continue
        ratio = r["max_abs"] / r["p999_abs"]
        key = "residual stream" if r["kind"] == "residual" else (
            "conv inputs (worst)" if r["kind"] in ("conv_input", "norm") and r["consumer_convs"] else None)
        if key is None:
            continue
        nodes = [residual_outputs.get(r["tensor"])] + list(r["consumer_convs"])
        wide = [n for n in nodes if n in plan_nodes and plan_nodes[n].startswith("a16")]
        planned = "recipe" if any(n in recipe_nodes for n in wide) else "extra" if wide else None
        old = series[key].get(r["layer"])
        if old is None or ratio > old[0]:
            series[key][r["layer"]] = (ratio, planned)
    ymax = max([lim16 * 2] + [v[0] for s in series.values() for v in s.values()])
    ylog = lambda v: top + (height - top - bottom) * (1 - math.log10(max(v, 1.0)) / math.log10(ymax))  # noqa: E731
    xpos = lambda i: left + (width - left - right) * (i + 0.5) / max(n_layers, 1)  # noqa: E731
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">'
           % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="20" font-size="13">max|x| / 99.9th percentile of |x| per layer (log scale); '
           'proxy of the DFC, not a prediction</text>' % left]
    for decade in range(0, int(math.log10(ymax)) + 1):
        y = ylog(10 ** decade)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#eee"/>' % (left, width - right, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">1e%d</text>' % (left - 6, y + 4, decade))
    for lim, label, colour in ((lim8, "8 bits resolve (A8W4 default)", "#d62728"),
                               (lim16, "16 bits resolve (plan)", "#2ca02c")):
        y = ylog(lim)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="6,4"/>'
                   % (left, width - right, y, y, colour))
        out.append('<text x="%d" y="%.1f" fill="%s">%s</text>' % (width - right + 6, y + 4, colour, label))
    colours = {"residual stream": "#1f77b4", "conv inputs (worst)": "#ff7f0e"}
    for k, (name, pts) in enumerate(series.items()):
        c = colours[name]
        seq = sorted(pts.items())
        if seq:
            out.append('<polyline fill="none" stroke="%s" points="%s"/>'
                       % (c, " ".join("%.1f,%.1f" % (xpos(i), ylog(v[0])) for i, v in seq)))
        for i, (v, planned) in seq:
            out.append('<circle cx="%.1f" cy="%.1f" r="3.5" stroke="%s" stroke-width="%s" fill="%s"><title>layer %d: '
                       '%.1f%s</title></circle>' % (xpos(i), ylog(v), "black" if planned == "extra" else c,
                                                    2 if planned == "extra" else 1, c if planned else "white", i, v,
                                                    {"recipe": ", 16-bit in Hailo's recipe",
                                                     "extra": ", 16-bit in the plan beyond the recipe"}.get(planned,
                                                                                                             "")))
        y = height - bottom + 32
        x = left + k * 300
        out.append('<circle cx="%d" cy="%d" r="4" fill="%s"/><text x="%d" y="%d">%s (filled: 16-bit; ringed: beyond '
                   'Hailo\'s recipe)</text>' % (x, y, c, x + 8, y + 4, name))
    out.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>'
               % (left, width - right, height - bottom, height - bottom))
    for i in range(0, n_layers, max(1, n_layers // 10)):
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (xpos(i), height - bottom + 14, i))
    out.append('<text x="%d" y="%d">layer</text>' % (width - right + 6, height - bottom + 14))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _tokens_per_s(r):
    if r.get("tokens_per_s_high") is None:
        return "(no bandwidth given)"
    return "%.1f-%.1f" % (r["tokens_per_s_low"], r["tokens_per_s_high"])


def markdown_report(doc, paths, worst=20):
    lines = ["# Quantization report: %s" % doc["model"], "",
             "Written by `llm2hef calibrate`. Everything under *simulation* is a %s." % PROXY_LABEL, "",
             "Calibration: %d prompt(s), %d token(s); held out: %d prompt(s)."
             % (doc["calibration"]["prompts"], doc["calibration"]["tokens"], doc["calibration"]["held_out_prompts"]),
             "", "## Rule", "", doc["rule"]["text"], "",
             "## Worst tensors (fewest 8-bit steps over the 99.9th percentile)", "",
             "| tensor | kind | layer | min | max | p99.9 abs | max/p99.9 | 8-bit steps "
             "| extreme at (token, channel) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in sorted(doc["ranges"], key=lambda r: r["levels_8bit"])[:worst]:
        at = r["max_at"] if abs(r["max"]) >= abs(r["min"]) else r["min_at"]
        where = "prompt %s token %s%s, channel %s" % (at.get("prompt"), at.get("token"),
                                                      " (id %s)" % at["token_id"] if "token_id" in at else "",
                                                      at.get("channel")) if at else ""
        lines.append("| `%s` | %s | %s | %.4g | %.4g | %.4g | %.1f | %.2f | %s |"
                     % (r["tensor"], r["kind"], "" if r["layer"] is None else r["layer"], r["min"], r["max"],
                        r["p999_abs"], r["max_abs"] / r["p999_abs"] if r["p999_abs"] else 0.0, r["levels_8bit"], where))
    plan = doc["plan"]["lines"]
    b = doc["budget"]
    lines += ["", "## Plan (%d line(s) beyond the default %s)" % (len(plan), doc["plan"]["default_mode"]), "",
              "Cost: %.1f MiB more weights (8 instead of 4 bits), %.1f MiB more activations (16 bits), "
              "beside %.1f MiB of A8W4 weights, on a %d GiB device%s."
              % (b["extra_weight_bytes"] / 2 ** 20, b["extra_activation_bytes"] / 2 ** 20,
                 b["weight_bytes_default"] / 2 ** 20, DEVICE_BYTES // 2 ** 30,
                 "" if b["limit_bytes"] is None else "; budget %.1f MiB, %d line(s) left out"
                 % (b["limit_bytes"] / 2 ** 20, len(doc["plan_over_budget"]))),
              "", "| ONNX node | mode | why |", "| --- | --- | --- |"]
    for line in plan:
        lines.append("| `%s` | %s | %s |" % (line["onnx_node"], line["precision_mode"], line["reason"]))
    if doc["plan"].get("unraised"):
        lines += ["", "Tensors that need 16 bits but whose producer no public mode raises (they stay 8-bit):", ""]
        lines += ["- `%s`: %s" % (u["tensor"], u["reason"]) for u in doc["plan"]["unraised"]]
    speed = doc.get("decode_speed")
    if speed:
        lines += ["", "## Decode speed (estimate)", "", speed["model"], "",
                  "| configuration | weights | bytes per token | tokens/s |", "| --- | --- | --- | --- |"]
        for name, r in speed["rows"].items():
            lines.append("| %s | %.1f MiB | %.1f MiB | %s |" % (name, r["weight_bytes"] / 2 ** 20,
                                                            r["bytes_per_token"] / 2 ** 20, _tokens_per_s(r)))
    if doc.get("weight_choice") and doc["weight_choice"].get("activations"):
        ac = doc["weight_choice"]["activations"]
        lines += ["", "## Activations chosen in the proxy", "",
                  "Floor: mean cosine %.4f with fp32 weights (every raisable tensor at 16 bits: %.4f)%s."
                  % (ac["floor_mean_cosine"], ac["every_raisable_mean_cosine"], "" if ac["met"] else "; not met"), "",
                  "| groups at 16 bits beyond the --min-levels rule | mean cosine | top-1 |", "| --- | --- | --- |"]
        for st in ac["steps"]:
            lines.append("| %s | %.4f | %.3f |" % (", ".join("`%s`" % g for g in st["groups"]) or "none",
                                                 st["mean_cosine"], st["top1_agreement"]))
    if doc.get("weight_choice"):
        ch = doc["weight_choice"]
        lines += ["", "## Weights chosen by cost", "",
                  "Floor: mean cosine %.4f on calibration prompts (the plan with fp32 weights: %.4f)%s."
                  % (ch["floor_mean_cosine"], ch["fp32_weights_mean_cosine"],
                     "" if ch["met"] else "; not met: " + ch["stopped"]), "",
                  "| 8-bit groups | mean cosine | top-1 | weights |", "| --- | --- | --- | --- |"]
        for st in ch["steps"]:
            lines.append("| %s | %.4f | %.3f | %.1f MiB |" % (", ".join("`%s`" % g for g in st["raised"]) or "none",
                                                            st["mean_cosine"], st["top1_agreement"],
                                                            st["weight_bytes"] / 2 ** 20))
    sim = doc.get("simulation")
    if sim:
        lines += ["", "## Simulation (%s)" % PROXY_LABEL, "",
                  "%d held-out prompt(s), %d position(s)." % (sim["held_out_prompts"], sim["positions"]), "",
                  "| configuration | mean cosine of logits vs fp32 | worst cosine | top-1 agreement | weights "
                  "| tokens/s | greedy continuation |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for name, c in sim["configurations"].items():
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                name, "%.4f" % c["mean_cosine"] if "mean_cosine" in c else "1", "%.4f" % c["worst_cosine"]
                if "worst_cosine" in c else "1", "%.3f" % c["top1_agreement"] if "top1_agreement" in c else "1",
                "%.1f MiB" % (c["weight_bytes"] / 2 ** 20) if "weight_bytes" in c else "",
                _tokens_per_s(c) if "bytes_per_token" in c else "",
                json.dumps(c["greedy"].get("text", c["greedy"]["tokens"]))))
        lost = [name for name, c in sim["configurations"].items() if not c["greedy"].get("kept", True)]
        if "plan" in lost:
            exact = sim["configurations"].get("plan activations, fp32 weights", {})
            lines += ["", "**The plan does not keep the fp32 greedy answer** (it departs at step %d). %s"
                      % (sim["configurations"]["plan"]["greedy"]["departs_at_step"],
                         "With fp32 weights the plan's activations keep it: the weights' rounding loses it; more "
                         "8-bit weight groups (a tighter --max-weight-drop, or --min-cosine) are what "
                         "would keep it." if exact.get("greedy", {}).get("kept") else
                         "The plan's activations lose it even with fp32 weights: more tensors at 16 bits "
                         "(a higher --min-levels) are what would keep it, at their cost in activation memory."),
                      "The answer is one prompt's greedy path: a close call at one step flips the rest; the mean "
                      "cosine and top-1 agreement over every position are the broader measure."]
    lines += ["", "Picture: %s" % os.path.basename(paths["svg"]), ""]
    return "\n".join(lines)


# ------------------------------------------------------------------ the proxy runs
class Proxy:
    """Fake-quantized copies of the graph under onnxruntime, and what they are
    judged by: logits at every real position against fp32."""

    def __init__(self, model, tensors, convs, summary, residual_outputs, feed, load_weight, manifest, kinds):
        self.model, self.tensors, self.convs, self.summary = model, tensors, convs, summary
        self.residual_outputs, self.feed, self.load_weight = residual_outputs, feed, load_weight
        self.per_position = all_positions(model) is not None
        self.quantizable = [n for n, t in tensors.items() if t["pass_through_of"] is None and t["kind"] in kinds]
        self.logit_names = [o["name"] for o in manifest["outputs"]]
        self.seq = manifest["cache_size"]
        self.stop = manifest_stop_tokens()
        self.decode = decoder()
        self._feeds = {}

    def feeds(self, tokens):
        """The prompt's inputs, kept while they fit in FEED_CACHE_BYTES (every
        configuration runs the same prompts; at cache 2048 one mask is 235 MB)."""
        key = tuple(tokens)
        if key in self._feeds:
            return self._feeds[key]
        f = self.feed(tokens)
        if sum(a.nbytes for v in self._feeds.values() for a in v.values()) + sum(a.nbytes for a in f.values()) \
                <= FEED_CACHE_BYTES:
            self._feeds[key] = f
        return f

    def weight(self, name):
        # Read again each time (from the page cache): keeping them would hold the model's fp32
        # weights once more beside the session's.
        return self.load_weight(name)

    def bits(self, plan, weights="plan", only_group=None):
        """Activation bits per quantized tensor and (bits, group size) per
        weight for a plan ({onnx_node: line}); weights: "plan" (the line's
        mode, a8_w4 where no line names the conv), "exact" (fp32), or "group"
        (only_group at its plan bits, the rest fp32). A tensor is at 16 bits
        when its producer's line writes a 16-bit output (inputs_embeds always:
        optimize.alls gives input_layer1 a16_w16)."""
        act = {}
        for n in self.quantizable:
            line = plan.get(self.tensors[n]["producer"])
            wide = self.tensors[n]["kind"] == "embeddings" or (line is not None and
                                                              line["precision_mode"] in SIXTEEN_BIT_OUTPUT)
            act[n] = 16 if wide else 8
        wbits = {}
        for c in self.convs:
            if not c["compressible"] or weights == "exact":
                continue
            line = plan.get(c["onnx_node"])
            mode = line["precision_mode"] if line else "a8_w4"
            if weights == "plan" or (weights == "group" and c["group"] == only_group):
                wbits[c["weight"]] = (weight_bits_of(mode), line.get("weight_group_size") if line else None)
        return act, wbits

    def session(self, act=None, wbits=None):
        """A session for the fp32 graph (act None) or a fake-quantized copy,
        with logits at every real position when the graph allows it."""
        m = self.model
        if act is not None:
            m = fake_quant_model(m, {n: (self.summary[n]["lo"], self.summary[n]["hi"], b) for n, b in act.items()})
        m = all_positions(m) or m
        qweights = {w: quantize_weight(self.weight(w), b, g) for w, (b, g) in (wbits or {}).items()}
        return session(m.SerializeToString(), HERE, qweights)

    def logits(self, sess, tokens):
        """[positions, vocab]: every real position, or the last one only when
        the lm_head does not read a last-position Slice."""
        np = _np()
        feeds = dict(self.feeds(tokens))
        if self.per_position:
            feeds[FIRST_ROW_INPUT] = np.array([self.seq - len(tokens)], np.int64)
        outs = sess.run(self.logit_names, feeds)
        return np.concatenate([o.reshape(o.shape[-2] if o.ndim >= 2 else 1, -1) for o in outs], axis=-1)

    def judge(self, sess, prompts, references):
        np = _np()
        cos, agree = [], 0
        for tokens, want in zip(prompts, references):
            got = self.logits(sess, tokens)
            for i in range(want.shape[0]):
                cos.append(cosine(got[i], want[i]))
                agree += int(np.argmax(got[i]) == np.argmax(want[i]))
        return dict(mean_cosine=float(np.mean(cos)), worst_cosine=float(np.min(cos)),
                    top1_agreement=agree / len(cos), positions=len(cos))

    def greedy(self, sess, prompt, steps):
        """Greedy continuation, each step a prefill of the whole sequence so far
        (what the runtime computes for it), until a stop token or `steps`."""
        np = _np()
        tokens, out = list(prompt), []
        for _ in range(steps):
            if len(tokens) >= self.seq:
                break
            nxt = int(np.argmax(self.logits(sess, tokens)[-1]))
            out.append(nxt)
            tokens.append(nxt)
            if nxt in self.stop:
                break
        g = dict(tokens=out)
        if self.decode:
            g["text"] = self.decode(out)
        return g


class DecodeCost:
    """What each generated token reads from the device's memory, and the
    tokens/s that gives (docs/decode-speed.md): when it generates, the
    Hailo-10H is bound by its memory bandwidth. Every on-chip weight is read
    once at its precision (constant matrices at 8 bits), plus the KV cache as
    `llm2hef inspect` counts it (K and V of every layer after the GQA
    expansion, one byte per value). The bandwidth (`--decode-bandwidth LOW:HIGH`
    bytes/s) comes from llm2hef, which anchors it on public figures for
    Qwen2-1.5B under Hailo's recipe; without it, only bytes are reported. An
    upper bound from bandwidth alone: only the chip can confirm it."""

    def __init__(self, convs, manifest, bandwidth):
        d = manifest["dims"]
        self.convs = convs
        self.kv = 2 * d["layers"] * d["heads"] * d["head_dim"] * manifest["cache_size"]
        self.bandwidth = bandwidth

    def weight_bytes(self, plan):
        total = 0
        for c in self.convs:
            line = plan.get(c["onnx_node"])
            bits = weight_bits_of(line["precision_mode"]) if line else (4 if c["compressible"] else 8)
            total += c["weight_elements"] * bits // 8
        return total

    def row(self, plan):
        w = self.weight_bytes(plan)
        r = dict(weight_bytes=w, bytes_per_token=w + self.kv, tokens_per_s_low=None, tokens_per_s_high=None)
        if self.bandwidth:
            r["tokens_per_s_low"] = self.bandwidth[0] / r["bytes_per_token"]
            r["tokens_per_s_high"] = self.bandwidth[1] / r["bytes_per_token"]
        return r

    def text(self):
        return ("bytes per generated token: every weight at its precision plus the KV cache (%d bytes at this "
                "cache); tokens/s = memory bandwidth / bytes, the bandwidth %s; a bound from bandwidth alone, only "
                "the chip can confirm it" % (self.kv, "%.2f-%.2f GB/s (llm2hef's anchor: Qwen2-1.5B under Hailo's "
                                            "recipe at 6.9 and 9.45 tokens/s, docs/decode-speed.md)"
                                            % (self.bandwidth[0] / 1e9, self.bandwidth[1] / 1e9)
                                            if self.bandwidth else "not given (--decode-bandwidth)"))


def choose_activations(proxy, convs, summary, producers, recipe, calib, args):
    """Which tensors beyond the --min-levels rule go to 16 bits. The best the
    activations can do is every raisable tensor at 16 bits (fp32 weights);
    groups of tensors (one producer in every decoder layer) are added, the
    fewest 8-bit steps first, until the plan's activations are within
    --max-activation-drop of that. The --min-levels rule alone looks at one
    tensor at a time; on a post-norm decoder (Gemma 3 270M) the plan it gave
    left the proxy's cosine at 0.78 with fp32 weights, against 0.999 with
    every raisable tensor at 16 bits.
    Returns (wide tensors, the choice's record)."""
    probe = calib[:max(1, args.sensitivity_prompts)]
    fp32 = proxy.session()
    refs = [proxy.logits(fp32, t) for t in probe]
    del fp32

    def judged(wide):
        lines = make_plan(summary, convs, producers, recipe, args.min_levels, wide=wide)[0]
        plan = {line["onnx_node"]: line for line in lines}
        return proxy.judge(proxy.session(*proxy.bits(plan, "exact")), probe, refs), plan

    raisable = [n for n in producers if n in summary]
    best, _ = judged(set(raisable))
    floor = best["mean_cosine"] - args.max_activation_drop
    base, base_plan = judged(set())
    already = {n for n in raisable if producers[n]["onnx_node"] in base_plan and
               base_plan[producers[n]["onnx_node"]]["precision_mode"] in SIXTEEN_BIT_OUTPUT}
    groups = {}
    for n in raisable:
        if n not in already:
            groups.setdefault(weight_group(producers[n]["onnx_node"]), []).append(n)
    steps_of = {g: min(grid_levels(summary[n]["lo"], summary[n]["hi"], summary[n]["p999"], 8) for n in names)
                for g, names in groups.items()}
    order = sorted(groups, key=lambda g: (steps_of[g], g))
    wide, chosen, steps, r = set(), [], [], base
    steps.append(dict(groups=[], mean_cosine=base["mean_cosine"], top1_agreement=base["top1_agreement"]))
    say("  activations: the --min-levels rule: mean cosine %.4f with fp32 weights (every raisable tensor at 16 "
        "bits: %.4f, floor %.4f)" % (base["mean_cosine"], best["mean_cosine"], floor))
    while r["mean_cosine"] < floor and order:
        g = order.pop(0)
        chosen.append(g)
        wide.update(groups[g])
        r, _ = judged(wide)
        steps.append(dict(groups=list(chosen), mean_cosine=r["mean_cosine"], top1_agreement=r["top1_agreement"]))
        say("  activations: + %s (%.1f 8-bit steps): mean cosine %.4f" % (g, steps_of[g], r["mean_cosine"]))
    record = dict(floor_mean_cosine=floor, every_raisable_mean_cosine=best["mean_cosine"], steps=steps,
                  met=r["mean_cosine"] >= floor)
    return wide, record


def choose_weights(proxy, convs, summary, producers, recipe, act_plan, calib, args, speed, wide=()):
    """Which groups of layers get 8-bit weights: the cheapest set that meets
    the quality floor. Each group's 4-bit cost in quality is measured alone
    (the plan's activations, that group at its plan weights, the rest fp32);
    groups are then raised in order of quality bought per byte, and the whole
    plan judged again after each, until the floor is met (or the tokens/s
    floor would be crossed). On calibration prompts, never the held-out ones.
    Returns (raised groups, sensitivity, the choice's record)."""
    probe = calib[:max(1, args.sensitivity_prompts)]
    fp32 = proxy.session()
    refs = [proxy.logits(fp32, t) for t in probe]
    del fp32
    exact = proxy.judge(proxy.session(*proxy.bits(act_plan, "exact")), probe, refs)
    floor = exact["mean_cosine"] - args.max_weight_drop
    if args.min_cosine is not None:
        floor = max(floor, args.min_cosine)

    def mode(c, plan):
        line = plan.get(c["onnx_node"])
        return line["precision_mode"] if line else default_mode_of(c)

    four_bit = sorted({c["group"] for c in convs if c["compressible"] and weight_bits_of(mode(c, act_plan)) == 4})
    sensitivity = dict(prompts=len(probe), baseline_mean_cosine=exact["mean_cosine"], groups={})
    drops, cost = {}, {}
    base_bytes = speed.weight_bytes(act_plan)
    for g in four_bit:
        r = proxy.judge(proxy.session(*proxy.bits(act_plan, "group", g)), probe, refs)
        drops[g] = exact["mean_cosine"] - r["mean_cosine"]
        with_g = {line["onnx_node"]: line for line in make_plan(summary, convs, producers, recipe, args.min_levels,
                                                                [g], wide=wide)[0]}
        cost[g] = max(speed.weight_bytes(with_g) - base_bytes, 1)
        sensitivity["groups"][g] = dict(mean_cosine=r["mean_cosine"], drop=drops[g], extra_weight_bytes=cost[g])
        say("  4-bit sensitivity of %s: mean cosine %.4f (%+.4f), 8-bit costs %.1f MiB"
            % (g, r["mean_cosine"], -drops[g], cost[g] / 2 ** 20))

    def meets(r):
        return r["mean_cosine"] >= floor and (args.min_top1 is None or r["top1_agreement"] >= args.min_top1)

    order = sorted((g for g in four_bit if drops[g] > 0), key=lambda g: (-drops[g] / cost[g], g))
    raised, plan, steps, stopped = [], act_plan, [], None
    while True:
        r = proxy.judge(proxy.session(*proxy.bits(plan)), probe, refs)
        row = speed.row(plan)
        steps.append(dict(raised=list(raised), mean_cosine=r["mean_cosine"], top1_agreement=r["top1_agreement"],
                          weight_bytes=row["weight_bytes"], tokens_per_s_high=row["tokens_per_s_high"]))
        say("  weights: %s: mean cosine %.4f (floor %.4f), top-1 %.3f, %.1f MiB of weights"
            % (", ".join(raised) or "all 4-bit as the recipe has them", r["mean_cosine"], floor,
               r["top1_agreement"], row["weight_bytes"] / 2 ** 20))
        if meets(r):
            break
        if not order:
            stopped = "every group that loses quality at 4 bits is already 8-bit and the floor is still not met"
            break
        g = order.pop(0)
        nxt = {line["onnx_node"]: line for line in make_plan(summary, convs, producers, recipe, args.min_levels,
                                                             raised + [g], wide=wide)[0]}
        fast = speed.row(nxt)["tokens_per_s_high"]
        if args.min_tokens_per_s is not None and fast is not None and fast < args.min_tokens_per_s:
            stopped = "8-bit %s would bring the estimate to %.1f tokens/s, under --min-tokens-per-s %g" % (
                g, fast, args.min_tokens_per_s)
            break
        raised.append(g)
        plan = nxt
    choice = dict(floor_mean_cosine=floor, fp32_weights_mean_cosine=exact["mean_cosine"], min_top1=args.min_top1,
                  min_tokens_per_s=args.min_tokens_per_s, met=stopped is None, stopped=stopped, steps=steps)
    if stopped:
        say("  weights: the quality floor is not met: " + stopped)
    return raised, sensitivity, choice


def manifest_stop_tokens():
    try:
        cfg = json.load(open(os.path.join(HERE, "resources", "hailo-config.json"), encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    stop = cfg.get("stop_token_id", [])
    return set(stop if isinstance(stop, list) else [stop])


# ------------------------------------------------------------------ main
def _number(positive):
    """argparse type: a finite float, above 0 (positive) or at least 0; NaN
    and infinities are refused (every comparison with NaN is false, so a
    plain range check lets it through)."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not a number" % text) from None
        if not math.isfinite(v) or (v <= 0 if positive else v < 0):
            raise argparse.ArgumentTypeError("%r must be a finite number %s" % (text, "above 0" if positive
                                                                               else "of 0 or more"))
        return v
    return parse


def _bandwidth(text):
    try:
        low, high = (float(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not LOW:HIGH bytes per second" % text) from None
    if not (math.isfinite(low) and math.isfinite(high) and 0 < low <= high):
        raise argparse.ArgumentTypeError("%r is not LOW:HIGH with 0 < LOW <= HIGH" % text)
    return low, high


def _count(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text) from None
    if v < 0:
        raise argparse.ArgumentTypeError("%r must be 0 or more" % text)
    return v


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--calib-tokens", help="JSON file: a list of token-id lists")
    src.add_argument("--calib-text", help="text file, tokenized with resources/tokenizer.json")
    src.add_argument("--calib-chat", help="JSON lines, one conversation (a list of {\"role\", \"content\"}) each, "
                                          "rendered through the exported chat template as the runtime renders it")
    held = ap.add_mutually_exclusive_group()
    held.add_argument("--eval-tokens", help="held-out prompts for the simulation (JSON list of token-id lists)")
    held.add_argument("--eval-text", help="held-out text for the simulation")
    held.add_argument("--eval-chat", help="held-out conversations for the simulation (JSON lines)")
    ap.add_argument("--calib-size", type=int, default=None, help="at most this many calibration prompts")
    ap.add_argument("--export-dir", default=None, help="the export folder (default: this script's folder)")
    ap.add_argument("-o", "--output", default=None, help="default EXPORT/quantization.json")
    ap.add_argument("--llm2hef", default="llm2hef")
    ap.add_argument("--min-levels", type=_number(True), default=DEFAULT_MIN_LEVELS,
                    help="fewest steps of the 8-bit grid the 99.9th percentile of |x| must span (default %(default)s)")
    ap.add_argument("--max-weight-drop", type=_number(False), default=DEFAULT_MAX_WEIGHT_DROP,
                    help="largest fall of the proxy's mean logits cosine that 4-bit weights may cause, against the "
                         "same plan with fp32 weights (default %(default)s)")
    ap.add_argument("--max-activation-drop", type=_number(False), default=DEFAULT_MAX_ACTIVATION_DROP,
                    help="how far the plan's activations may stay below every raisable tensor at 16 bits, in the "
                         "proxy's mean logits cosine with fp32 weights (default %(default)s)")
    ap.add_argument("--min-cosine", type=_number(True), default=None,
                    help="a floor on the plan's mean logits cosine in the proxy (more 8-bit weights until met)")
    ap.add_argument("--min-top1", type=_number(True), default=None,
                    help="a floor on the plan's top-1 agreement in the proxy")
    ap.add_argument("--min-tokens-per-s", type=_number(True), default=None,
                    help="never raise weights past this decode-speed estimate")
    ap.add_argument("--decode-bandwidth", type=_bandwidth, default=None,
                    help="LOW:HIGH bytes/s of the device when it generates (llm2hef passes its anchor)")
    ap.add_argument("--precision-budget", type=_count, default=None, help="bytes the plan may add")
    ap.add_argument("--no-simulate", action="store_true",
                    help="ranges and the activation plan only: no proxy runs (weights stay 4-bit in the plan)")
    ap.add_argument("--greedy-steps", type=int, default=16)
    ap.add_argument("--sensitivity-prompts", type=int, default=2,
                    help="calibration prompts the 4-bit weight sensitivity is measured on (default %(default)s)")
    ap.add_argument("--simulate-kinds", default=",".join(SIMULATED_KINDS),
                    help="kinds of activation tensors the proxy quantizes (default %(default)s)")
    ap.add_argument("--threads", type=_count, default=0,
                    help="onnxruntime's intra-op threads (default 0: one per core)")
    ap.add_argument("--memory-limit", type=_count, default=None,
                    help="bytes the run may use (default: the machine's available memory); the run is refused "
                         "up front when its own estimate exceeds it")
    args = ap.parse_args()
    global HERE, SESSION_THREADS
    SESSION_THREADS = args.threads
    if args.export_dir:
        HERE = os.path.abspath(args.export_dir)
    if args.output is None:
        args.output = os.path.join(HERE, "quantization.json")
    args.simulate_kinds = set(args.simulate_kinds.split(","))
    return args


def _exit_on_signal(signum, frame):
    # SIGTERM and SIGHUP end the run as Ctrl-C does: through the finally
    # blocks, so the work folder and any half-written temporary go too.
    raise SystemExit(128 + signum)


def main():
    import signal
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _exit_on_signal)
    args = parse_args()
    require_modules(["numpy", "onnx", "onnxruntime"], "calibrate.py")
    import onnx
    t_start = time.time()
    manifest = json.load(open(os.path.join(HERE, "manifest.json"), encoding="utf-8"))
    seq, vocab = manifest["cache_size"], manifest["dims"]["vocab"]
    input_names = [i["name"] for i in manifest["inputs"]]
    embeddings_input = next(i["name"] for i in manifest["inputs"] if i["role"] == "embeddings")
    calib, calib_info = read_prompts({"--calib-tokens": args.calib_tokens, "--calib-text": args.calib_text,
                                      "--calib-chat": args.calib_chat}, HERE, seq, vocab)
    calib, _ = take_prompts(calib, calib_info, args.calib_size, args.calib_size is not None, seq)
    args.calib_info = calib_info  # quantization.json says what the prompts were
    held_out, _ = read_prompts({"--eval-tokens": args.eval_tokens, "--eval-text": args.eval_text,
                                "--eval-chat": args.eval_chat}, HERE, seq, vocab)
    if held_out is not None:
        pass  # given apart: never calibrated on
    elif args.no_simulate:
        held_out = []
    elif len(calib) >= 2:
        # The proxy must not judge on what it calibrated on: hold out the last quarter (at least one prompt).
        k = max(1, len(calib) // 4)
        calib, held_out = calib[:-k], calib[-k:]
        say("no --eval-chat/--eval-text/--eval-tokens: the last %d calibration prompt(s) are held out for the "
            "simulation" % k)
    else:
        fail("the simulation needs held-out prompts: give --eval-chat, --eval-text or --eval-tokens, at least two "
             "calibration prompts, or --no-simulate")

    model = onnx.load(os.path.join(HERE, "model.onnx"), load_external_data=False)
    tensors, convs, residual_adds = analyse_graph(model, embeddings_input)
    shapes = shapes_of(model)
    producer = {o: n for n in model.graph.node for o in n.output}
    for name in list(tensors):
        shape = shapes.get(name)
        axis = token_axis_of(shape, seq) if shape else None
        if axis is None:
            del tensors[name]  # no token axis (the last-position slice): its source is recorded instead
            continue
        tensors[name]["shape"], tensors[name]["token_axis"] = shape, axis
    for c in convs:
        # The lm_head reads a Slice of the final hidden states: judge it by the whole tensor.
        p = producer.get(c["input"])
        if c["input"] not in tensors and p is not None and p.op_type == "Slice" and p.input[0] in tensors:
            c["input"] = p.input[0]
    convs = [c for c in convs if c["input"] in tensors]

    parts = estimate_peak(manifest, tensors, not args.no_simulate)
    limit = args.memory_limit if args.memory_limit is not None else available_memory()
    if limit is not None:
        check_memory(parts, limit, args.memory_limit is not None)

    out = os.path.abspath(args.output)
    work = tempfile.mkdtemp(prefix=".calibrate-", dir=os.path.dirname(out))
    try:
        feed = Feeder(args.llm2hef, HERE, input_names, work)
        doc = run(args, manifest, model, tensors, convs, residual_adds, calib, held_out, feed, t_start)
    finally:
        for f in os.listdir(work):
            os.remove(os.path.join(work, f))
        os.rmdir(work)

    base = os.path.splitext(out)[0]
    paths = dict(json=out, report=base + "-report.md", svg=base + ".svg")
    plan_nodes = {line["onnx_node"]: line["precision_mode"] for line in doc["plan"]["lines"]}
    recipe_nodes = {line["onnx_node"] for line in doc["hailo_recipe"]["lines"]
                    if line["precision_mode"].startswith("a16")}
    residual_outputs = {a["output"]: a["onnx_node"] for a in residual_adds}
    write_atomic(paths["svg"], svg_picture(doc["ranges"], plan_nodes, residual_outputs, args.min_levels,
                                           manifest["dims"].get("layers", 1), recipe_nodes))
    write_atomic(paths["report"], markdown_report(doc, paths))
    write_atomic(out, json.dumps(doc, indent=1) + "\n")
    for r in sorted(doc["ranges"], key=lambda r: r["levels_8bit"])[:3]:
        say("worst: %s (%s): max|x| %.4g, 99.9th percentile %.4g, %.2f step(s) of an 8-bit grid"
            % (r["tensor"], r["kind"], r["max_abs"], r["p999_abs"], r["levels_8bit"]))
    say("plan: %d line(s) beyond %s, %.1f MiB more" % (len(doc["plan"]["lines"]), DEFAULT_MODE,
                                                       doc["budget"]["spent_bytes"] / 2 ** 20))
    for name, c in doc.get("simulation", {}).get("configurations", {}).items():
        if "mean_cosine" in c:
            say("simulation, %s: %s: mean cosine %.4f, worst %.4f, top-1 %.3f, %sgreedy %s"
                % ("a proxy, not the DFC", name, c["mean_cosine"], c["worst_cosine"], c["top1_agreement"],
                   "weights %.1f MiB, %s tokens/s (estimate), " % (c["weight_bytes"] / 2 ** 20, _tokens_per_s(c))
                   if "weight_bytes" in c else "", json.dumps(c["greedy"].get("text", c["greedy"]["tokens"]))))
    say("wrote %s" % paths["json"])
    say("wrote %s" % paths["report"])
    say("wrote %s" % paths["svg"])


def measure_ranges(manifest, model, tensors, calib, feed):
    """Runs every calibration prompt through the graph with statistics outputs added: each
    activation tensor's range and per-channel sums, refused where a value is not finite."""
    np = _np()
    seq = manifest["cache_size"]
    say("ranges: %d activation tensors, %d calibration prompt(s), one run per prompt" % (len(tensors), len(calib)))
    stats_graph, stat_outputs = stats_model(model, tensors)
    sess = session(stats_graph.SerializeToString(), HERE)
    del stats_graph
    names = [out for name in tensors for out in stat_outputs[name].values()]
    stats = {n: RangeStats(t["shape"][-1] if t["token_axis"] == len(t["shape"]) - 2 else None)
             for n, t in tensors.items()}
    progress = Progress("ranges", len(calib), "prompt")
    for p, tokens in enumerate(calib):
        feeds = feed(tokens)
        feeds[FIRST_ROW_INPUT] = np.array([seq - len(tokens)], np.int64)
        got = dict(zip(names, sess.run(names, feeds)))
        del feeds
        for name, t in tensors.items():
            rows = list(t["shape"])
            rows[t["token_axis"]] = len(tokens)
            reduced = {stat: got[out] for stat, out in stat_outputs[name].items()}
            try:
                stats[name].add_reduced(reduced, rows, t["token_axis"], dict(prompt=p, token_ids=tokens))
            except NonFinite as e:
                progress.done()
                fail("activation %s (%s, layer %s) is not finite (NaN or infinite) at %s on calibration prompt %d: "
                     "the fp32 graph overflows there or reads a weight that is not finite (manifest.json lists "
                     "those as nonfinite_weights), so no range can be measured"
                     % (name, t["kind"], t["layer"], json.dumps(e.where), p))
        progress.step("%d tokens" % len(tokens))
    progress.done()
    del sess
    return stats


def weight_loader(model):
    """Reads one initializer as float32, from the external data file where it lives there."""
    import onnx
    from onnx import external_data_helper, numpy_helper
    np = _np()
    inits = {i.name: i for i in model.graph.initializer}

    def load_weight(name):
        t = onnx.TensorProto()
        t.CopyFrom(inits[name])
        if external_data_helper.uses_external_data(t):
            external_data_helper.load_external_data_for_tensor(t, HERE)
        return numpy_helper.to_array(t).astype(np.float32, copy=False)

    return load_weight


def describe_weights(convs, stats, load_weight, theta_len):
    """Marks each conv compressible or not (and its group and rows), and lists its weight with an
    estimate of the 4-bit output error from the measured input ranges."""
    np = _np()
    weight_rows = []
    for c in convs:
        w = load_weight(c["weight"])
        c["weight_elements"] = int(w.size)
        # Constant matrices (rotate-half, GQA, pe tiling) are mostly zeros; the a8_w4 lines of
        # `llm2hef har lines` leave them out, and so does the proxy (more than 90 % zeros).
        constant = float(np.count_nonzero(w)) <= 0.1 * w.size
        c["compressible"] = w.ndim == 2 and not constant and min(w.shape) > theta_len
        c["group"] = weight_group(c["onnx_node"])
        c["rows"] = int(w.shape[0]) if w.ndim == 2 else None
        st = stats[c["input"]]
        estimate = None
        if c["compressible"] and st.channel_sum_sq is not None and st.channel_sum_sq.shape[0] == w.shape[0]:
            estimate = weight_output_error(w, st.channel_mean_sq(), 4)
        weight_rows.append(dict(onnx_node=c["onnx_node"], weight=c["weight"], group=c["group"], shape=list(w.shape),
                                compressible=c["compressible"], rel_output_error_w4_estimate=estimate))
        del w
    return weight_rows


def range_rows(tensors, stats, summary, convs, min_levels):
    """The "ranges" rows: each activation tensor's measured range, the grid levels it gets at 8 and
    16 bits, and its largest channels."""
    np = _np()
    conv_by_input = {}
    for c in convs:
        conv_by_input.setdefault(c["input"], []).append(c["onnx_node"])
    ranges = []
    for name, t in tensors.items():
        s, sm = stats[name], summary[name]
        top = []
        if s.channel_max_abs is not None:
            top = [dict(channel=int(i), max_abs=float(s.channel_max_abs[i]))
                   for i in np.argsort(-s.channel_max_abs)[:4]]
        ranges.append(dict(
            tensor=name, kind=t["kind"], layer=t["layer"], producer=t["producer"], shape=t["shape"],
            consumer_convs=conv_by_input.get(name, []), min=s.min, max=s.max, max_abs=s.max_abs(),
            p999_abs=sm["p999"], values=s.count,
            levels_8bit=min(grid_levels(s.min, s.max, sm["p999"], 8), 1e30),
            levels_16bit=min(grid_levels(s.min, s.max, sm["p999"], 16), 1e30),
            needs_16bit=activation_bits_needed(s.min, s.max, sm["p999"], min_levels) == 16,
            min_at=s.min_at, max_at=s.max_at, top_channels=top))
    return ranges


def rule_text(args):
    """The plan's rule in words, with the thresholds this run used."""
    return (
        "The plan starts from Hailo's own recipe for its LLMs, applied by role (every residual Add and the "
        "product feeding down_proj at a16_w16, down_proj at a16_w4_a16, the other block convs a8_w4 with "
        "weight_group_size=%d where the input width is a multiple of it, the lm_head at the DFC's default "
        "a8_w8). An activation tensor then needs 16 bits when an 8-bit per-tensor grid over [min(x,0), "
        "max(x,0)] leaves its 99.9th percentile of |x| fewer than %g steps (max|x| / p99.9 beyond about %.0f): "
        "its producer gets a16_w16 and the convs that consume it an a16 mode, together. Further tensors go to "
        "16 bits, in groups (one producer in every decoder layer), the fewest 8-bit steps first, until the "
        "proxy's mean logits cosine with fp32 weights is within %g of every raisable tensor at 16 bits. "
        "Weights are 4-bit "
        "unless the quality floor needs more: groups of layers (the same projection in every decoder layer) "
        "get 8-bit weights, the cheapest first for the quality each buys (measured alone in the proxy), until "
        "the mean logits cosine on calibration prompts is within %g of the same plan with fp32 weights%s%s."
        % (RECIPE_GROUP_SIZE, args.min_levels, 255.0 / args.min_levels, args.max_activation_drop,
           args.max_weight_drop,
           "" if args.min_cosine is None else " and at least %g" % args.min_cosine,
           "" if args.min_top1 is None else ", with top-1 agreement at least %g" % args.min_top1))


def simulate(proxy, held_out, recipe_nodes, plan_nodes, doc, args):
    """Judges the default, the Hailo recipe and the plan in the fake-quantization proxy against fp32
    on the held-out prompts, and records it as doc["simulation"]."""
    t_sim = time.time()
    fp32 = proxy.session()
    refs = [proxy.logits(fp32, t) for t in held_out]
    configurations = {"fp32": dict(greedy=proxy.greedy(fp32, held_out[0], args.greedy_steps))}
    del fp32
    rows = (("A8W4 default", {}), ("Hailo recipe", recipe_nodes), ("plan", plan_nodes))
    for name, plan in rows + (("plan activations, fp32 weights", None),):
        act, wbits = proxy.bits(plan) if plan is not None else proxy.bits(plan_nodes, "exact")
        sess = proxy.session(act, wbits)
        c = proxy.judge(sess, held_out, refs)
        c["greedy"] = proxy.greedy(sess, held_out[0], args.greedy_steps)
        c["activations_16bit"] = sum(1 for b in act.values() if b == 16)
        for bits in (4, 8, 16):
            c["weights_%dbit" % bits] = sum(1 for b, _ in wbits.values() if b == bits)
        c["weights_grouped"] = sum(1 for _, g in wbits.values() if g)
        if plan is not None:
            c.update(doc["decode_speed"]["rows"][name])
        configurations[name] = c
        del sess
    want = configurations["fp32"]["greedy"]["tokens"]
    for name, c in configurations.items():
        got = c["greedy"]["tokens"]
        c["greedy"]["kept"] = got == want
        c["greedy"]["departs_at_step"] = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
                                              None if len(got) == len(want) else min(len(got), len(want)))
    doc["simulation"] = dict(
        label=PROXY_LABEL, held_out_prompts=len(held_out), positions=sum(r.shape[0] for r in refs),
        per_position=proxy.per_position, greedy_prompt_tokens=len(held_out[0]),
        method=("activations: per-tensor asymmetric QuantizeLinear/DequantizeLinear (uint8/uint16) with the "
                "calibrated min/max, on the tensors of kinds " + ", ".join(sorted(args.simulate_kinds)) +
                " (inputs_embeds at 16 bits, as optimize.alls asks for input_layer1); a tensor is at 16 bits "
                "when its producer's line writes a 16-bit output; conv outputs are not quantized; weights: "
                "symmetric round-to-nearest per output channel, and per run of %d input rows where a line "
                "gives weight_group_size, at the line's weight bits (4 where no line names a compressible "
                "conv), constant matrices exact; no rotation (quarot) and no bias correction are simulated"
                % RECIPE_GROUP_SIZE),
        configurations=configurations)
    doc["timing"]["simulation_s"] = round(time.time() - t_sim, 2)


def run(args, manifest, model, tensors, convs, residual_adds, calib, held_out, feed, t_start):
    np = _np()
    seq = manifest["cache_size"]
    stats = measure_ranges(manifest, model, tensors, calib, feed)
    t_ranges = time.time() - t_start

    theta_len = manifest.get("theta_length", 0)
    load_weight = weight_loader(model)
    weight_rows = describe_weights(convs, stats, load_weight, theta_len)

    summary = {n: dict(lo=s.min, hi=s.max, p999=s.percentile_abs(99.9), elements=int(np.prod(tensors[n]["shape"])))
               for n, s in stats.items()}
    residual_in = [a for a in residual_adds if a["output"] in summary]
    residual_outputs = {a["output"]: a["onnx_node"] for a in residual_in}
    roles, products = graph_roles(model, convs)
    producers = producers_of(tensors, residual_in, products, model)
    recipe = recipe_lines(convs, residual_in, products, roles, summary)
    recipe_nodes = {line["onnx_node"]: line for line in recipe}
    proxy = Proxy(model, tensors, convs, summary, residual_outputs, feed, load_weight, manifest, args.simulate_kinds)
    speed = DecodeCost(convs, manifest, args.decode_bandwidth)

    # The plan's activations (the recipe, then what the ranges need), weights
    # as the recipe has them; then weights by cost (weight_choice below).
    wide, act_choice, raised, sensitivity, choice = set(), None, [], None, None
    if not args.no_simulate:
        wide, act_choice = choose_activations(proxy, convs, summary, producers, recipe, calib, args)
    act_lines, _, _, _ = make_plan(summary, convs, producers, recipe, args.min_levels, wide=wide)
    act_plan = {line["onnx_node"]: line for line in act_lines}
    if not args.no_simulate:
        raised, sensitivity, choice = choose_weights(proxy, convs, summary, producers, recipe, act_plan, calib, args,
                                                     speed, wide)
        choice["activations"] = act_choice
    t_sensitivity = time.time() - t_start - t_ranges

    lines, dropped, spent, unraised = make_plan(summary, convs, producers, recipe, args.min_levels, raised,
                                                args.precision_budget, wide)
    plan_nodes = {line["onnx_node"]: line for line in lines}
    ranges = range_rows(tensors, stats, summary, convs, args.min_levels)
    weight_default = sum(c["weight_elements"] // 2 if c["compressible"] else c["weight_elements"] for c in convs)
    extra_w = sum(c["weight_elements"] * (weight_bits_of(plan_nodes[c["onnx_node"]]["precision_mode"]) - 4) // 8
                  for c in convs if c["compressible"] and c["onnx_node"] in plan_nodes)
    line_keys = ("onnx_node", "op_type", "precision_mode", "reason", "extra_bytes", "weight_group_size")
    doc = dict(
        version=1, model=manifest["model"]["name"], proxy_label=PROXY_LABEL,
        calibration=dict(source=args.calib_info["path"], format=args.calib_info["format"], prompts=len(calib),
                         tokens=sum(len(s) for s in calib), held_out_prompts=len(held_out), cache_size=seq),
        rule=dict(min_levels=args.min_levels, max_activation_drop=args.max_activation_drop,
                  max_weight_drop=args.max_weight_drop, min_cosine=args.min_cosine,
                  min_top1=args.min_top1, min_tokens_per_s=args.min_tokens_per_s, text=rule_text(args)),
        plan=dict(default_mode=DEFAULT_MODE, lines=[{k: line[k] for k in line_keys if k in line} for line in lines],
                  unraised=unraised),
        plan_over_budget=[{k: line[k] for k in ("onnx_node", "precision_mode", "reason", "extra_bytes")}
                          for line in dropped],
        hailo_recipe=dict(source="Hailo's model script for Qwen2-1.5B-Instruct (inside qwen2_1.5b_instruct.q.har; "
                                 "a copy: l-nmch/hailo-10h-llm-compiler recipes/hailo-qwen2-1.5b-instruct.alls), "
                                 "applied by role", lines=[{k: line[k] for k in line_keys if k in line}
                                                           for line in recipe]),
        budget=dict(limit_bytes=args.precision_budget, spent_bytes=spent, weight_bytes_default=weight_default,
                    extra_weight_bytes=extra_w, extra_activation_bytes=spent - extra_w, device_bytes=DEVICE_BYTES),
        decode_speed=dict(rows={"A8W4 default": speed.row({}), "Hailo recipe": speed.row(recipe_nodes),
                                "plan": speed.row(plan_nodes)}, model=speed.text()),
        weight_choice=choice,
        ranges=ranges, weights=weight_rows, weight_sensitivity=sensitivity,
        timing=dict(ranges_s=round(t_ranges, 2), sensitivity_s=round(t_sensitivity, 2)))

    if not args.no_simulate:
        simulate(proxy, held_out, recipe_nodes, plan_nodes, doc, args)
    doc["timing"]["total_s"] = round(time.time() - t_start, 2)
    return doc


if __name__ == "__main__":
    main()
