#include "llm2hef/sdk/blocks.hpp"

#include <cmath>
#include <functional>
#include <numbers>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

// Every builder call is a statement of its own, never one of several
// arguments to a call: C++ leaves the order of sibling arguments unspecified,
// and the call order is the order of nodes, initializers and external-data
// bytes in the exported graph. Where the old nested spelling evaluated
// right to left (GCC's order), the statements keep that order, so exports
// stay byte-identical to those of earlier releases.
namespace llm2hef::sdk {

namespace {

// [width, width*tiles] with an identity block per tile.
Value tile_matrix(GraphBuilder& g, const std::string& leaf, int64_t width, int64_t tiles) {
  return g.constant_rows(leaf, {width, width * tiles}, [=](int64_t r0, int64_t r1, std::span<float> out) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t t = 0; t < tiles; ++t) out[static_cast<size_t>((r - r0) * width * tiles + t * width + r)] = 1.0f;
  });
}

}  // namespace

RuntimeInputs declare_runtime_inputs(GraphBuilder& g, const Plan& plan) {
  const RuntimeSizes sizes = runtime_sizes(plan);
  RuntimeInputs in;
  for (const RuntimeInput& ri : kRuntimeInputs) {
    Value v = g.input(std::string(ri.name), graph_shape(ri, sizes));
    switch (ri.id) {
      case InputRole::embeddings: in.embeds = v; break;
      case InputRole::attention_mask: in.mask = v; break;
      case InputRole::pe_q_cos: in.q_cos = v; break;
      case InputRole::pe_q_sin: in.q_sin = v; break;
      case InputRole::pe_k_cos: in.k_cos = v; break;
      case InputRole::pe_k_sin: in.k_sin = v; break;
    }
  }
  return in;
}

PeTables tile_pe_tables(GraphBuilder& g, const RuntimeInputs& in, const Plan& plan) {
  auto s = g.scope("pe_tiling");
  const int64_t t = static_cast<int64_t>(plan.theta.size());
  Value q_tile = tile_matrix(g, "q_tile", t, plan.pe_q_tiles);
  Value k_tile = plan.pe_k_tiles == plan.pe_q_tiles ? q_tile : tile_matrix(g, "k_tile", t, plan.pe_k_tiles);
  PeTables out;
  out.q_cos = g.matmul(in.q_cos, q_tile, "q_cos/MatMul");
  out.q_sin = g.matmul(in.q_sin, q_tile, "q_sin/MatMul");
  out.k_cos = g.matmul(in.k_cos, k_tile, "k_cos/MatMul");
  out.k_sin = g.matmul(in.k_sin, k_tile, "k_sin/MatMul");
  return out;
}

Value head_mask(GraphBuilder& g, const Value& mask, int64_t seq) { return g.slice(mask, 3, 0, seq, "mask/Slice"); }

Value linear(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const LinearSpec& spec) {
  WeightView view;
  view.transpose = spec.layout == WeightLayout::out_in;
  view.col_begin = spec.out_begin;
  view.col_end = spec.out_end;
  Value w = spec.scale == 1.0f ? g.weight("weight", ckpt, spec.weight, view)
                               : g.scaled_weight("weight", ckpt, spec.weight, view, spec.scale);
  if (w.shape[0] != x.shape.back())
    throw BadInput(ckpt.info(spec.weight).file.string() + ": tensor '" + spec.weight + "' gives a [" +
                   std::to_string(w.shape[0]) + " -> " + std::to_string(w.shape[1]) +
                   "] projection, but its input has " + std::to_string(x.shape.back()) + " features");
  Value y = g.matmul(x, w);
  if (!spec.bias) return y;
  WeightView bview;
  bview.col_begin = spec.out_begin;
  bview.col_end = spec.out_end;
  Value b = spec.scale == 1.0f ? g.weight("bias", ckpt, *spec.bias, bview)
                               : g.scaled_weight("bias", ckpt, *spec.bias, bview, spec.scale);
  if (b.shape.size() != 1 || b.shape[0] != w.shape[1])
    throw BadInput(ckpt.info(*spec.bias).file.string() + ": tensor '" + *spec.bias + "' has shape " +
                   shape_string(ckpt.info(*spec.bias).shape) + ", expected [" + std::to_string(w.shape[1]) + "]");
  return g.add(y, b);
}

Value layer_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight,
                 const std::string& bias, float eps) {
  const int64_t h = x.shape.back();
  ckpt.expect(weight, {h});
  ckpt.expect(bias, {h});
  // One LayerNormalization node: what torch's TorchScript exporter writes for
  // nn.LayerNorm at opset 17, hence what SEED's distilgpt2 export held when the
  // DFC parsed it (docs/gpt2.md, "LayerNorm"). The bias is written first: the
  // order the exports have always had (see the note at the top of this file).
  const Value b = g.weight("bias", ckpt, bias);
  const Value w = g.weight("weight", ckpt, weight);
  return g.layer_normalization(x, w, b, eps);
}

Value layer_norm_without_affine(GraphBuilder& g, const Value& x, float eps) {
  const int64_t h = x.shape.back();
  const std::vector<float> zeros(static_cast<size_t>(h), 0.0f), ones(static_cast<size_t>(h), 1.0f);
  const Value b = g.constant("bias", {h}, zeros);
  const Value w = g.constant("weight", {h}, ones);
  return g.layer_normalization(x, w, b, eps);
}

Value inverse_sqrt(GraphBuilder& g, const Value& x) {
  // torch writes rsqrt as Sqrt then Div with a constant 1, never Reciprocal
  // (hailo-contract.md section 2, "Op patterns").
  const Value root = g.sqrt(x);
  const Value one = g.scalar("one", 1.0f);
  return g.div(one, root);
}

Value rms_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight, float eps,
               float weight_offset) {
  ckpt.expect(weight, {x.shape.back()});
  Value ms = g.reduce_mean(g.pow(x, 2.0f), -1);
  Value inv = inverse_sqrt(g, g.add(ms, g.scalar("eps", eps)));
  Value w;
  if (weight_offset == 0.0f) {
    w = g.weight("weight", ckpt, weight);
  } else {
    // HF's `1.0 + weight.float()`: the same float32 addition, done once here.
    std::vector<float> shifted = ckpt.read(weight);
    for (float& v : shifted) v = weight_offset + v;
    w = g.constant("weight", {x.shape.back()}, shifted);
  }
  const Value normed = g.mul(x, inv);
  return g.mul(normed, w);
}

Value gelu(GraphBuilder& g, const Value& x, GeluForm form) {
  auto s = g.scope("gelu");
  if (form == GeluForm::sigmoid) return g.mul(x, g.sigmoid(g.mul(x, g.scalar("alpha", 1.702f))));
  if (form == GeluForm::erf) {
    // torch: x * 0.5 * (1.0 + erf(x / sqrt(2))) — (x * 0.5) is not formed
    // first by torch's exporter, which writes Div, Erf, Add, Mul(x, .), Mul(., 0.5).
    const Value root2 = g.scalar("sqrt_2", static_cast<float>(std::numbers::sqrt2));
    const Value e = g.erf(g.div(x, root2));
    const Value one_plus = g.add(e, g.scalar("one", 1.0f));
    const Value scaled = g.mul(x, one_plus);
    return g.mul(scaled, g.scalar("half", 0.5f));
  }
  const float c = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  Value cube = g.mul(g.mul(x, x), x);
  Value inner = g.add(x, g.mul(cube, g.scalar("cubic", 0.044715f)));
  Value t = g.tanh(g.mul(inner, g.scalar("sqrt_2_over_pi", c)));
  Value one_plus = g.add(t, g.scalar("one", 1.0f));
  const Value half = g.scalar("half", 0.5f);
  const Value scaled = g.mul(x, one_plus);
  return g.mul(scaled, half);
}

Value silu(GraphBuilder& g, const Value& x) { return g.mul(x, g.sigmoid(x)); }

Value relu(GraphBuilder& g, const Value& x) {
  auto s = g.scope("relu");
  return g.relu(x);
}

namespace {

// down(act(gate(x)) * up(x)): act(gate) before up, as torch orders
// `act(x @ Wgate)` then `x @ Wup`.
Value gated_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const SwigluSpec& spec,
                const std::function<Value(const Value&)>& act_fn, const std::string& product) {
  Value act, up;
  {
    auto s = g.scope(spec.gate_scope);
    act = act_fn(
        linear(g, ckpt, x, {spec.gate_weight, std::nullopt, WeightLayout::out_in, spec.gate_begin, spec.gate_end}));
  }
  {
    auto s = g.scope(spec.up_scope);
    up = linear(g, ckpt, x, {spec.up_weight, std::nullopt, WeightLayout::out_in, spec.up_begin, spec.up_end});
  }
  Value gated = g.mul(act, up, product);
  auto s = g.scope(spec.down_scope);
  LinearSpec down{spec.down_weight, std::nullopt};
  down.scale = spec.down_scale;
  return linear(g, ckpt, gated, down);
}

}  // namespace

Value swiglu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const SwigluSpec& spec) {
  return gated_mlp(
      g, ckpt, x, spec, [&](const Value& v) { return silu(g, v); }, "swiglu/Mul");
}

Value geglu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const SwigluSpec& spec) {
  return gated_mlp(
      g, ckpt, x, spec, [&](const Value& v) { return gelu(g, v, GeluForm::tanh); }, "geglu/Mul");
}

Value gelu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const GeluMlpSpec& spec) {
  Value up;
  {
    auto s = g.scope(spec.up_scope);
    up = linear(g, ckpt, x, spec.up);
  }
  const Value act = gelu(g, up, spec.form);
  auto s = g.scope(spec.down_scope);
  return linear(g, ckpt, act, spec.down);
}

Value relu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const ReluMlpSpec& spec) {
  Value up;
  {
    auto s = g.scope(spec.up_scope);
    up = linear(g, ckpt, x, spec.up);
  }
  const Value act = relu(g, up);
  auto s = g.scope(spec.down_scope);
  return linear(g, ckpt, act, spec.down);
}

Value attention(GraphBuilder& g, const Value& q, const Value& k, const Value& v, const Value& mask,
                const AttentionShape& a) {
  const int64_t s = a.seq, d = a.head_dim;
  Value kk = k, vv = v;
  if (a.kv_heads != a.heads) {
    if (a.heads % a.kv_heads != 0)
      throw Unsupported("attention: " + std::to_string(a.heads) + " heads is not a multiple of " +
                        std::to_string(a.kv_heads) + " key/value heads");
    const int64_t rep = a.heads / a.kv_heads;
    // kv head g feeds q heads g*rep .. g*rep+rep-1 (repeat_interleave).
    Value expand =
        g.constant_rows("gqa_expand", {a.kv_heads * d, a.heads * d}, [=](int64_t r0, int64_t r1, std::span<float> out) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t kv = r / d, i = r % d;
            for (int64_t j = 0; j < rep; ++j)
              out[static_cast<size_t>((r - r0) * a.heads * d + (kv * rep + j) * d + i)] = 1.0f;
          }
        });
    kk = g.matmul(k, expand, "k_gqa/MatMul");
    vv = g.matmul(v, expand, "v_gqa/MatMul");
  }
  // Node order as torch's exporter writes `view(...).transpose(1, 2)` for q,
  // k, v and then `k.transpose(-1, -2)`: its peephole pass fuses k's two
  // transposes into one and appends it after v's, so the per-layer op
  // sequences compare one to one (tests/numerics/test_op_sequences.py).
  Value qh = g.transpose(g.reshape(q, {1, s, a.heads, d}, "q/Reshape"), {0, 2, 1, 3}, "q/Transpose");
  Value k4 = g.reshape(kk, {1, s, a.heads, d}, "k/Reshape");
  Value vh = g.transpose(g.reshape(vv, {1, s, a.heads, d}, "v/Reshape"), {0, 2, 1, 3}, "v/Transpose");
  Value kt = g.transpose(k4, {0, 2, 3, 1}, "k/Transpose");
  // q k^T / sqrt(HD) as LNM writes it: a Div, not a Mul by the inverse.
  const Value divisor = g.scalar("score_divisor", a.score_divisor);
  const Value qk = g.matmul(qh, kt, "qk/MatMul");
  Value scores = g.div(qk, divisor, "qk/Div");
  if (a.logit_softcap > 0) {
    // HF's `w / softcap; tanh(w); w * softcap`, before the mask is added.
    const Value cap = g.scalar("logit_softcap", a.logit_softcap);
    const Value scaled = g.div(scores, cap, "softcap/Div");
    const Value capped = g.tanh(scaled, "softcap/Tanh");
    scores = g.mul(capped, cap, "softcap/Mul");
  }
  // The first head's block of the runtime mask, sliced where torch slices
  // `mask[:, :, :, :s]`: right before it is added.
  Value masked = g.add(scores, head_mask(g, mask, s), "mask/Add");
  if (a.window_band) masked = g.add(masked, *a.window_band, "window/Add");
  Value probs = g.softmax(masked, -1);
  Value ctx = g.matmul(probs, vh, "pv/MatMul");
  Value merged = g.transpose(ctx, {0, 2, 1, 3}, "out/Transpose");
  return g.reshape(merged, {1, s, a.heads * d}, "out/Reshape");
}

Value last_position(GraphBuilder& g, const Value& x) {
  const int64_t s = x.shape[1];
  return g.slice(x, 1, s - 1, s, "last_position/Slice");
}

std::vector<int64_t> choose_lm_head_shards(int64_t vocab, int64_t requested, std::string& reason, int64_t max_width) {
  // Beyond this many outputs an "equal split" is a degenerate one (a prime
  // vocabulary would give width-1 shards); refuse rather than export that.
  constexpr int64_t kMaxShards = 64;
  if (requested > 0) {
    if (vocab % requested != 0) {
      // A wrong number given by the user (exit 2), with the right ones.
      std::string valid;
      for (int64_t k = 1; k <= kMaxShards; ++k)
        if (vocab % k == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(k);
      throw UsageError("--lm-head-shards " + std::to_string(requested) + " does not divide the vocabulary of " +
                       std::to_string(vocab) + " into equal widths (the runtime requires equal output frame sizes); " +
                       "valid values up to " + std::to_string(kMaxShards) + ": " + valid);
    }
    reason = "requested: " + std::to_string(requested) + " x " + std::to_string(vocab / requested);
    return std::vector<int64_t>(static_cast<size_t>(requested), vocab / requested);
  }
  if (vocab <= max_width) {
    reason = "vocabulary of " + std::to_string(vocab) + " fits one output (<= " + std::to_string(max_width) + ")";
    return {vocab};
  }
  for (int64_t n = 2; n <= kMaxShards; ++n) {
    if (vocab % n != 0 || vocab / n > max_width) continue;
    reason = std::to_string(n) + " x " + std::to_string(vocab / n) + ": the fewest equal shards no wider than " +
             std::to_string(max_width) + " (the runtime requires equal output frame sizes)";
    return std::vector<int64_t>(static_cast<size_t>(n), vocab / n);
  }
  throw Unsupported("the vocabulary of " + std::to_string(vocab) + " has no split into at most " +
                    std::to_string(kMaxShards) + " equal outputs no wider than " + std::to_string(max_width) +
                    " (the runtime requires equal output frame sizes); pass --lm-head-shards K with K dividing it");
}

}  // namespace llm2hef::sdk
