"""Tiny HARs that reproduce the defects of hailo-contract.md section 5.

A HAR is a tar of `<net>.hn` (JSON), `<net>.npz` (weights, keys
`<scope>/<layer>/<param>:0`) and `<net>.metadata.json`. The graphs below
follow the shapes a DFC parse of llm2hef's ONNX produces (section 2-4):
NHWC shapes with batch -1, pe inputs feeding tiling convs, one mask slice per
decoder layer feeding an ew_add with input_repeats, one lm_head conv. Only
tarfile, zipfile-through-numpy and numpy are used (no DFC).
"""
from __future__ import annotations

import io
import json
import tarfile

import numpy as np

import manifest_fixture

SEQ, HD, NHEAD, NKV, HIDDEN = 8, 4, 4, 2, 16


class Hn:
    """Builds an HN with both ends of every edge recorded."""

    def __init__(self, name, scopes=None):
        self.name = name
        self.layers = {}
        self.scopes = scopes or [name]
        self.order = []

    def add(self, name, type_, inputs, out_shape, params=None, in_shapes=None, original=None, **extra):
        """original: the ONNX node names the layer was made of (its
        `original_names`); a placeholder from the layer's name when None."""
        layer = {"type": type_, "input": list(inputs), "output": [],
                 "input_shapes": in_shapes if in_shapes is not None
                 else [self.layers[i]["output_shapes"][0] for i in inputs],
                 "output_shapes": [list(out_shape)],
                 "original_names": list(original) if original else ["/" + name.split("/")[-1]],
                 "params": params or {}}
        layer.update(extra)
        for i in inputs:
            self.layers[i]["output"].append(name)
        self.layers[name] = layer
        return name

    def doc(self):
        return {"name": self.name,
                "net_params": {"version": "1.0", "stage": "HN", "dtype": "float32",
                               "output_layers_order": self.order, "net_scopes": self.scopes},
                "layers": self.layers}


def conv_params(cin, cout):
    return {"kernel_shape": [1, 1, cin, cout], "strides": [1, 1, 1, 1], "dilations": [1, 1, 1, 1],
            "padding": "VALID", "groups": 1, "activation": "linear", "batch_norm": False,
            "elementwise_add": False, "bias": True}


def tile_matrix(n):
    return np.tile(np.eye(HD, dtype=np.float32), (1, n))


def rotate_half(width):
    r = np.zeros((width, width), np.float32)
    for h in range(width // HD):
        for i in range(HD // 2):
            r[h * HD + i, h * HD + i + HD // 2] = 1.0
            r[h * HD + i + HD // 2, h * HD + i] = -1.0
    return r


# The pe inputs in LNM's order (k before q), as the export numbers them: input_layer3..6.
LNM_PE_ORDER = ("pe_k_cos", "pe_q_cos", "pe_k_sin", "pe_q_sin")


# The final logit soft-cap tanh(x / c) * c (Gemma 2) as per-channel HN layers
# after the lm_head conv: a scale by 1/c, a tanh activation, a scale by c.
# How the DFC writes a Div or Mul by a scalar is not public; `normalization`
# (per-channel gamma and beta) and a one-input ew_div / ew_mult (the constant
# folded in) are two HN layer types that can hold one (hailo-contract.md section 4).
SOFTCAP = 30.0
SOFTCAP_NORMS = ("normalization", "activation", "normalization")
SOFTCAP_EW = ("ew_div", "activation", "ew_mult")


def parsed_har(vocab=48, layers=2, net="tiny", seed=0, kv_heads=None, pe_order=LNM_PE_ORDER, positions="rope",
               table_first=False, softcap=None):
    """(hn, weights) of a parsed HAR: pe tiling convs, mask slices, one lm_head conv.

    pe_order: the role each of input_layer3..6 carries in this HN (a parse
    that numbered the inputs otherwise than the export is a different order
    than the manifest's). positions: "rope" is RoPE as the export writes it
    (hailo-contract.md section 2): q*cos + (q R)*sin, R the rotate-half
    matmul the parser makes a conv, each table tiled by its own conv first;
    "learned" is GPT-2's learned positions carried through the pe tables
    (sliced, multiplied by coefficients, added to the embeddings), which has
    no rotation to tell cos from sin. table_first puts the table before the
    other operand in each RoPE ew_mult's `input`. kv_heads defaults to NKV
    as it is when called (tests set the module's sizes). softcap: the layer
    types of a final logit soft-cap between the lm_head conv and the output
    layer (SOFTCAP_NORMS or SOFTCAP_EW), the last of them then in
    output_layers_order.

    Each layer's `original_names` are the nodes of llm2hef's exported
    model.onnx it stands for (`/model/layers.N/...`, as `llm2hef export`
    names them), which is what the DFC records there (hailo-contract.md
    section 4; LNM finding 11 maps HN layers to `layers.N` ops through
    them). Input layers name the ONNX input, the scores matmul lists the
    MatMul and the scaling Div folded into it: how the parser spreads fused
    nodes over original_names is not documented publicly (uncertain)."""
    kv_heads = NKV if kv_heads is None else kv_heads
    rng = np.random.default_rng(seed)
    s = net + "/"
    hn = Hn(net)
    w = {}

    def conv(name, inp, cin, cout, kernel=None, original=None):
        hn.add(s + name, "conv", [inp], [-1, 1, SEQ, cout] if "lm_head" not in name else [-1, 1, 1, cout],
               conv_params(cin, cout), original=original)
        k = kernel if kernel is not None else rng.standard_normal((cin, cout)).astype(np.float32)
        w[s + name + "/kernel:0"] = k.reshape(1, 1, cin, cout)
        w[s + name + "/bias:0"] = rng.standard_normal(cout).astype(np.float32)
        return s + name

    emb = hn.add(s + "input_layer1", "input_layer", [], [-1, 1, SEQ, HIDDEN], in_shapes=[[-1, 1, SEQ, HIDDEN]],
                 original=["inputs_embeds"])
    mask = hn.add(s + "input_layer2", "input_layer", [], [-1, 1, SEQ, NHEAD * SEQ],
                  in_shapes=[[-1, 1, SEQ, NHEAD * SEQ]], original=["attention_mask"])
    pe = {}
    for idx, role in enumerate(pe_order):
        n = NHEAD if role.startswith("pe_q") else kv_heads
        layer = hn.add(s + "input_layer%d" % (idx + 3), "input_layer", [], [-1, 1, SEQ, HD],
                       in_shapes=[[-1, 1, SEQ, HD]], original=[role])
        pe[role] = conv("conv%d" % (idx + 1), layer, HD, HD * n, tile_matrix(n),
                        original=["/model/pe_tiling/%s/MatMul" % role.removeprefix("pe_")])
    x = emb
    c = 5
    if positions == "learned":
        parts = []
        for i, role in enumerate(LNM_PE_ORDER):
            width = hn.layers[pe[role]]["output_shapes"][0][-1]
            cols = hn.add(s + "slice%d" % (layers + 2 + i), "slice", [pe[role]], [-1, 1, SEQ, HD // 2],
                          {"features_slice": [0, HD // 2, 1]})
            parts.append(conv("conv%d" % c, cols, HD // 2, HIDDEN))
            c += 1
            assert width >= HD
        total = parts[0]
        for i, p in enumerate(parts[1:]):
            total = hn.add(s + "ew_add%d" % (4 * layers + 1 + i), "ew_add", [total, p], [-1, 1, SEQ, HIDDEN])
        x = hn.add(s + "ew_add%d" % (4 * layers + 4), "ew_add", [emb, total], [-1, 1, SEQ, HIDDEN])
    mult = 1
    for b in range(layers):
        at = "/model/layers.%d/attn/" % b
        q = conv("conv%d" % c, x, HIDDEN, NHEAD * HD, original=[at + "q_proj/MatMul"])
        c += 1
        k = conv("conv%d" % c, x, HIDDEN, kv_heads * HD, original=[at + "k_proj/MatMul"])
        c += 1
        if positions == "rope":
            qr = conv("conv%d" % c, q, NHEAD * HD, NHEAD * HD, rotate_half(NHEAD * HD),
                      original=[at + "q/rope/rotate_half/MatMul"])
            c += 1
            kr = conv("conv%d" % c, k, kv_heads * HD, kv_heads * HD, rotate_half(kv_heads * HD),
                      original=[at + "k/rope/rotate_half/MatMul"])
            c += 1
            m = []
            for a, t, node in [(q, pe["pe_q_cos"], "q/rope/cos/Mul"), (qr, pe["pe_q_sin"], "q/rope/sin/Mul"),
                               (k, pe["pe_k_cos"], "k/rope/cos/Mul"), (kr, pe["pe_k_sin"], "k/rope/sin/Mul")]:
                m.append(hn.add(s + "ew_mult%d" % mult, "ew_mult", [t, a] if table_first else [a, t],
                                [-1, 1, SEQ, hn.layers[a]["output_shapes"][0][-1]], original=[at + node]))
                mult += 1
            qa = hn.add(s + "ew_add%d" % (4 * b + 1), "ew_add", [m[0], m[1]], [-1, 1, SEQ, NHEAD * HD],
                        original=[at + "q/rope/Add"])
            ka = hn.add(s + "ew_add%d" % (4 * b + 2), "ew_add", [m[2], m[3]], [-1, 1, SEQ, kv_heads * HD],
                        original=[at + "k/rope/Add"])
        else:
            qa, ka = q, k
        scores = hn.add(s + "matmul%d" % (b + 1), "matmul", [qa, ka], [-1, 1, SEQ, NHEAD * SEQ],
                        {"transpose_matmul_input": True, "groups": NHEAD}, original=[at + "qk/MatMul", at + "qk/Div"])
        sl = hn.add(s + "slice%d" % (b + 1), "slice", [mask], [-1, 1, SEQ, SEQ],
                    {"height_slice": [0, SEQ, 1], "width_slice": [0, SEQ, 1], "features_slice": [0, SEQ, 1]},
                    original=[at + "mask/Slice"])
        masked = hn.add(s + "ew_add%d" % (4 * b + 3), "ew_add", [scores, sl], [-1, 1, SEQ, NHEAD * SEQ],
                        {"input_repeats": [[1, 1, 1], [1, 1, NHEAD]], "input_tiles": [[1, 1, 1], [1, 1, 1]]},
                        original=[at + "mask/Add"])
        sm = hn.add(s + "softmax%d" % (b + 1), "softmax", [masked], [-1, 1, SEQ, NHEAD * SEQ], {"groups": NHEAD},
                    original=[at + "Softmax"])
        o = conv("conv%d" % c, sm, NHEAD * SEQ, HIDDEN, original=[at + "o_proj/MatMul"])
        c += 1
        x = hn.add(s + "ew_add%d" % (4 * b + 4), "ew_add", [o, x], [-1, 1, SEQ, HIDDEN],
                   original=["/model/layers.%d/attn_residual/Add" % b])
    ln = hn.add(s + "layer_normalization1", "layer_normalization", [x], [-1, 1, SEQ, HIDDEN],
                original=["/model/norm/ReduceMean"])
    norm = hn.add(s + "normalization1", "normalization", [ln], [-1, 1, SEQ, HIDDEN], original=["/model/norm/Mul_1"])
    w[norm + "/gamma:0"] = rng.standard_normal(HIDDEN).astype(np.float32)
    w[norm + "/beta:0"] = np.zeros(HIDDEN, np.float32)
    last = hn.add(s + "slice%d" % (layers + 1), "slice", [norm], [-1, 1, 1, HIDDEN],
                  {"height_slice": [SEQ - 1, SEQ, 1]}, original=["/model/last_position/Slice"])
    head = conv("conv%d_lm_head" % c, last, HIDDEN, vocab, original=["/model/lm_head/MatMul"])
    # DFC names are conv<N>; rename the lm_head to a plain one.
    name = s + "conv%d" % c
    hn.layers[name] = hn.layers.pop(head)
    hn.layers[last]["output"] = [name]
    w[name + "/kernel:0"] = w.pop(head + "/kernel:0")
    w[name + "/bias:0"] = w.pop(head + "/bias:0")
    end = name
    for i, kind in enumerate(softcap or ()):
        node = ("Div", "Tanh", "Mul")[i]
        params = {"activation": "tanh"} if kind == "activation" else {}
        end = hn.add(s + "%s_softcap%d" % (kind, i), kind, [end], [-1, 1, 1, vocab], params,
                     original=["/model/final_logit_softcap/" + node])
        if kind == "normalization":
            w[end + "/gamma:0"] = np.full(vocab, 1 / SOFTCAP if i == 0 else SOFTCAP, np.float32)
            w[end + "/beta:0"] = np.zeros(vocab, np.float32)
        elif kind != "activation":
            w[end + "/scalar:0"] = np.float32(SOFTCAP).reshape(1)
    hn.add(s + "output_layer1", "output_layer", [end], [-1, 1, 1, vocab], original=["logits"])
    hn.order = [end]
    return hn.doc(), w


def hn_from_onnx(onnx_path, net="tiny", input_order=None):
    """(hn, weights) of the HN a parse of an llm2hef export's model.onnx would
    give, node for node, by the parser's conventions as hailo-contract.md
    states them: graph inputs become `input_layer1..N` in ONNX input order
    (section 2; `input_order` lists the ONNX input indices in the order a
    parser would number them instead); a MatMul by a constant becomes a
    single-input `conv` and one of two activations a `matmul` (section 2,
    "Linear layers"); NHWC shapes with batch -1, the last axis the ONNX one.
    That a Mul or Add of two activations becomes an `ew_mult` or `ew_add` is
    this writer's assumption (both are HN layer types, section 4; no parsed
    HN of an llm2hef export has been seen). Every other node becomes one
    layer named after its op. Weights are not carried (a placeholder array
    only): use it with --dry-run."""
    import onnx
    from onnx import shape_inference

    model = shape_inference.infer_shapes(onnx.load(str(onnx_path), load_external_data=False))
    g = model.graph
    width = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        width[vi.name] = dims[-1].dim_value if dims else 1
    constants = {i.name for i in g.initializer}
    constants.update(o for n in g.node if n.op_type == "Constant" for o in n.output)
    hn = Hn(net)
    s = net + "/"
    producer = {}
    order = list(input_order) if input_order is not None else list(range(len(g.input)))
    for number, index in enumerate(order, start=1):
        inp = g.input[index]
        w = width[inp.name]
        producer[inp.name] = hn.add(s + "input_layer%d" % number, "input_layer", [], [-1, 1, SEQ, w],
                                    in_shapes=[[-1, 1, SEQ, w]], original_names=[inp.name])
    counts = {}
    for node in g.node:
        live = [x for x in node.input if x in producer and x not in constants]
        if not live:
            continue
        two = len(live) == 2
        kind = {"MatMul": "matmul" if two else "conv", "Mul": "ew_mult" if two else "mul_by_constant",
                "Add": "ew_add" if two else "add_constant"}.get(node.op_type, node.op_type.lower())
        counts[kind] = counts.get(kind, 0) + 1
        name = hn.add(s + "%s%d" % (kind, counts[kind]), kind, [producer[x] for x in live],
                      [-1, 1, SEQ, width.get(node.output[0], 1)])
        for o in node.output:
            producer[o] = name
    last = producer[g.output[0].name]
    hn.add(s + "output_layer1", "output_layer", [last], hn.layers[last]["output_shapes"][0])
    hn.order = [last]
    return hn.doc(), {s + "placeholder/kernel:0": np.zeros(1, np.float32)}


def quantized_hn(net="tiny", permuted=True, base_scope=True, base_cache=False, groups=None):
    """An HN after optimize. set_kv_cache_global_params duplicates the graph
    into `<net>__prefill` and `<net>__tbt` next to the base `<net>`, and the
    quantized HN keeps all three with the same layer names in each
    (hailo-contract.md section 3; LNM shows `<net>/conv49`,
    `<net>__prefill/conv49` and `<net>__tbt/conv49`). The two groups have
    cache layers and a residual conv whose `input` is permuted against its
    input_shapes (4864 vs 896) when `permuted`; the base scope is the
    unduplicated graph: no cache layers unless `base_cache`, and no permuted
    conv (the defect comes with the duplication). `groups` replaces the two
    group scopes (for malformed HNs)."""
    groups = list(groups) if groups is not None else [net + "__prefill", net + "__tbt"]
    scopes = ([net] if base_scope else []) + groups
    hn = Hn(net, scopes=scopes)
    for g in scopes:
        s = g + "/"
        in_group = g in groups
        x = hn.add(s + "input_layer1", "input_layer", [], [-1, 1, SEQ, 896], in_shapes=[[-1, 1, SEQ, 896]])
        up = hn.add(s + "conv20", "conv", [x], [-1, 1, SEQ, 4864], conv_params(896, 4864))
        if in_group or base_cache:
            kc_in = hn.add(s + "cache_input_layer1", "input_layer", [], [-1, 1, SEQ, 8], in_shapes=[[-1, 1, SEQ, 8]],
                           io_type="cache")
            kc = hn.add(s + "matmul1", "matmul", [x, kc_in], [-1, 1, SEQ, 896])
            hn.add(s + "cache_output_layer1", "output_layer", [kc], [-1, 1, SEQ, 896], io_type="cache")
        else:
            hn.add(s + "matmul1", "matmul", [x], [-1, 1, SEQ, 896])
        inputs = [x, up] if permuted and in_group else [up, x]
        down = hn.add(s + "conv21", "conv", inputs, [-1, 1, SEQ, 896], conv_params(4864, 896),
                      in_shapes=[[-1, 1, SEQ, 4864], [-1, 1, SEQ, 896]])
        head = hn.add(s + "conv22", "conv", [down], [-1, 1, 1, 48], conv_params(896, 48))
        hn.add(s + "output_layer1", "output_layer", [head], [-1, 1, 1, 48])
        hn.order.append(head)
    return hn.doc()


def npz_bytes(weights):
    buf = io.BytesIO()
    np.savez(buf, **weights)
    return buf.getvalue()


def write_har(path, net, hn, weights=None, state="hailo_model", extra=()):
    """extra: (name, bytes) members added after the standard ones."""
    members = [(net + ".hn", json.dumps(hn).encode())]
    if weights is not None:
        members.append((net + ".npz", npz_bytes(weights)))
    if state is not None:
        members.append((net + ".metadata.json", json.dumps({"state": state, "sdk_version": "5.3.0"}).encode()))
    members.extend(extra)
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def manifest(vocab=48, shards=None, net="tiny", adapter="gpt2", kv_heads=None):
    # The pe roles in LNM's order (k before q): the fixups must follow the manifest, not a fixed order.
    return manifest_fixture.manifest(hidden=HIDDEN, layers=1, vocab=vocab, heads=NHEAD,
                                     kv_heads=NKV if kv_heads is None else kv_heads, head_dim=HD,
                                     cache=SEQ, prefill=SEQ, theta_length=HD, shards=shards or [vocab], scope=net,
                                     adapter=adapter, roles=["embeddings", "attention_mask", *LNM_PE_ORDER])


def read_har(path):
    """{member: bytes} of a HAR, plus the parsed HN and weights."""
    with tarfile.open(path) as tar:
        data = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    hn = next(json.loads(v) for k, v in data.items() if k.endswith(".hn") and not k.endswith((".fp.hn", ".native.hn")))
    npz = next((v for k, v in data.items() if k.endswith(".npz")), None)
    weights = dict(np.load(io.BytesIO(npz))) if npz is not None else None
    return data, hn, weights
