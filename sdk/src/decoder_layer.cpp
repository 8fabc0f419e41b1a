#include "llm2hef/sdk/decoder_layer.hpp"

#include <utility>

#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/rope_bases.hpp"
#include "llm2hef/sdk/sliding_window_band.hpp"

namespace llm2hef::sdk {

bool DecoderContext::sliding() const {
  const std::vector<bool>& layers = model.sliding_window.layers;
  return layer >= 0 && static_cast<size_t>(layer) < layers.size() && layers[static_cast<size_t>(layer)];
}

namespace {

// The per-graph inputs of the SDK's body kinds (DecoderContext::input).

// The pe tables of each RoPE base the model has (rope_bases.hpp); one base: io.pe.
struct RopeBaseTables {
  using Result = std::vector<PeTables>;
  bool operator==(const RopeBaseTables&) const = default;
  Result make(GraphBuilder& g, const DecoderContext& ctx) const {
    const ModelDims& d = ctx.model.dims;
    return select_rope_bases(g, ctx.io.pe, ctx.model.rope_bases, d.heads, d.kv_heads, d.head_dim);
  }
};

// The band the sliding layers add beyond the window, when the plan chose
// --sliding-window band (sliding_window_band.hpp).
struct WindowBand {
  using Result = Value;
  bool operator==(const WindowBand&) const = default;
  static bool chosen(const DecoderContext& ctx) { return ctx.plan.options.value(kSlidingWindowOption, "") == "band"; }
  Result make(GraphBuilder& g, const DecoderContext& ctx) const {
    return sliding_window_band(g, ctx.model.dims.heads, ctx.plan.cache_size, ctx.model.sliding_window.window);
  }
};

}  // namespace

// ---- attention ----

void declare_body(TensorTable& t, const ModelDims& d, const AttentionMixer& a) {
  // A fused q/k/v tensor is the description's to declare (its projector splits it).
  t.attention(a.spec, d, !a.fused_qkv, !a.head_layer_norms);
  if (!a.head_layer_norms) return;
  const auto& n = *a.head_layer_norms;
  for (const auto* names : {&n.q_weights, &n.q_biases, &n.k_weights, &n.k_biases})
    for (const std::string& name : *names) t.add(name, {d.head_dim});
}

void request_inputs(GraphBuilder& g, const DecoderContext& ctx, const AttentionMixer& /*body*/) {
  ctx.input(g, RopeBaseTables{});
  if (ctx.sliding() && WindowBand::chosen(ctx)) ctx.input(g, WindowBand{});
}

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const AttentionMixer& a) {
  AttentionBlockSpec spec = a.spec;
  spec.shape = ctx.attention;
  if (ctx.sliding() && WindowBand::chosen(ctx)) spec.shape.window_band = ctx.input(g, WindowBand{});
  if (a.head_layer_norms) {
    const auto& n = *a.head_layer_norms;
    const int64_t d = spec.shape.head_dim;
    spec.q_norm_fn = head_layer_norm_fn(ctx.ckpt, n.q_weights, n.q_biases, spec.shape.heads, d, spec.norm_eps);
    spec.k_norm_fn = head_layer_norm_fn(ctx.ckpt, n.k_weights, n.k_biases, spec.shape.kv_heads, d, spec.norm_eps);
  }
  const std::vector<PeTables>& bases = ctx.input(g, RopeBaseTables{});
  if (a.rope_base < 0 || static_cast<size_t>(a.rope_base) >= bases.size())
    throw InternalError("decoder description: an attention reads RoPE base " + std::to_string(a.rope_base) + " of " +
                        std::to_string(bases.size()));
  const PeTables& tables = bases[static_cast<size_t>(a.rope_base)];
  const Value& mask = ctx.io.runtime.mask;
  if (!a.fused_qkv) return attention_block(g, ctx.ckpt, x, mask, tables, spec);
  static const char* const kNames[3] = {"q_proj", "k_proj", "v_proj"};
  Value qkv[3];
  for (int part = 0; part < 3; ++part) {
    auto s = g.scope(kNames[part]);
    qkv[part] = a.fused_qkv(g, ctx.ckpt, x, part);
  }
  return attention_from_qkv(g, ctx.ckpt, qkv[0], qkv[1], qkv[2], mask, tables, spec);
}

// ---- feed-forwards ----

void declare_body(TensorTable& t, const ModelDims& d, const SwigluSpec& s) { t.swiglu(s, d.hidden, d.intermediate); }

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const SwigluSpec& s) {
  return swiglu_mlp(g, ctx.ckpt, x, s);
}

void declare_body(TensorTable& t, const ModelDims& d, const GegluMlp& m) { t.swiglu(m.spec, d.hidden, d.intermediate); }

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const GegluMlp& m) {
  return geglu_mlp(g, ctx.ckpt, x, m.spec);
}

void declare_body(TensorTable& t, const ModelDims& d, const GeluMlpSpec& m) { t.gelu_mlp(m, d.hidden, d.intermediate); }

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const GeluMlpSpec& m) {
  return gelu_mlp(g, ctx.ckpt, x, m);
}

void declare_body(TensorTable& t, const ModelDims& d, const ReluMlpSpec& m) {
  t.linear(m.up, d.intermediate, d.hidden);
  t.linear(m.down, d.hidden, d.intermediate);
}

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const ReluMlpSpec& m) {
  return relu_mlp(g, ctx.ckpt, x, m);
}

// ---- custom ----

void declare_body(TensorTable& t, const ModelDims& /*dims*/, const CustomBody& c) { t.append(c.tensors); }

void request_inputs(GraphBuilder& g, const DecoderContext& ctx, const CustomBody& c) {
  if (c.inputs) c.inputs(g, ctx);
}

Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const CustomBody& c) {
  if (!c.build) throw InternalError("decoder description: a custom body has nothing to build");
  return c.build(g, ctx, x);
}

// ---- a layer ----

AttentionBlockSpec& attention_spec(LayerDescription& layer) {
  if (auto* a = std::get_if<AttentionMixer>(&layer.mixer.body)) return a->spec;
  throw InternalError("decoder description: the layer's mixer is not attention");
}

namespace {

const char* placement_name(NormPlacement p) {
  switch (p) {
    case NormPlacement::pre: return "pre";
    case NormPlacement::sandwich: return "sandwich";
    case NormPlacement::post: return "post";
    case NormPlacement::residual: return "residual";
    case NormPlacement::shared: return "shared";
  }
  return "?";
}

// The combinations a placement cannot mean: a post_norm outside a sandwich
// (or a sandwich without one), a norm on a shared branch, a shared branch
// outside a parallel layer's feed-forward, a parallel branch normed after its body.
void check_placements(const LayerDescription& l) {
  auto refuse = [](const BranchDescription& b, const std::string& why) {
    throw InternalError("decoder description: branch '" + b.scope + "' (norm placement " + placement_name(b.placement) +
                        ") " + why);
  };
  for (const BranchDescription* b : {&l.mixer, &l.ffn}) {
    if ((b->placement == NormPlacement::sandwich) != b->post_norm.has_value())
      refuse(*b, b->post_norm ? "has a post_norm, which only a sandwich placement reads"
                              : "needs a post_norm after its body");
    if (b->placement == NormPlacement::shared && (!b->norm.scope.empty() || !b->norm.weight.empty()))
      refuse(*b, "names a norm it would not apply (it reads the mixer's normed input)");
  }
  const bool ffn_shared = l.ffn.placement == NormPlacement::shared;
  if (l.mixer.placement == NormPlacement::shared || (ffn_shared && !l.parallel))
    refuse(ffn_shared ? l.ffn : l.mixer, "shares a norm outside the feed-forward of a parallel layer");
  if (l.parallel && l.mixer.placement != NormPlacement::pre) refuse(l.mixer, "is in a parallel layer (pre only)");
  if (l.parallel && !ffn_shared && l.ffn.placement != NormPlacement::pre)
    refuse(l.ffn, "is in a parallel layer (pre or shared only)");
}

// In the order the branch reads them: the norm before or around the body
// first, the body's rows, then a norm after the body.
void declare_branch(TensorTable& t, const ModelDims& d, const BranchDescription& b) {
  const bool norm_first = b.placement == NormPlacement::pre || b.placement == NormPlacement::sandwich ||
                          b.placement == NormPlacement::residual;
  if (norm_first) t.norm(b.norm, d.hidden);
  std::visit([&](const auto& body) { declare_body(t, d, body); }, b.body);
  if (b.placement == NormPlacement::post) t.norm(b.norm, d.hidden);
  if (b.post_norm) t.norm(*b.post_norm, d.hidden);
}

// The branch's body on `x`, in the branch's scope.
Value body(GraphBuilder& g, const DecoderContext& ctx, const BranchDescription& b, const Value& x) {
  auto s = g.scope(b.scope);
  return std::visit([&](const auto& kind) { return build_body(g, ctx, x, kind); }, b.body);
}

// A branch of a sequential layer, its norms where its placement puts them.
Value residual_branch(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const BranchDescription& b) {
  const Checkpoint& ckpt = ctx.ckpt;
  const std::string add = b.residual + "/Add";
  switch (b.placement) {
    case NormPlacement::pre: {
      const Value normed = apply_norm(g, ckpt, hidden, b.norm);
      const Value out = body(g, ctx, b, normed);
      return g.add(hidden, out, add);
    }
    case NormPlacement::sandwich: {
      const Value normed = apply_norm(g, ckpt, hidden, b.norm);
      const Value out = body(g, ctx, b, normed);
      const Value post = apply_norm(g, ckpt, out, *b.post_norm);
      return g.add(hidden, post, add);
    }
    case NormPlacement::post: {
      const Value out = body(g, ctx, b, hidden);
      const Value post = apply_norm(g, ckpt, out, b.norm);
      return g.add(hidden, post, add);
    }
    case NormPlacement::residual: {
      const Value out = body(g, ctx, b, hidden);
      const Value sum = g.add(hidden, out, add);
      return apply_norm(g, ckpt, sum, b.norm);
    }
    case NormPlacement::shared: break;  // refused by check_placements
  }
  throw InternalError("decoder description: branch '" + b.scope + "' has no sequential placement");
}

// Both branches read the layer's input; summed as the reference groups it.
Value parallel_layer(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const LayerDescription& l) {
  const Value normed_1 = apply_norm(g, ctx.ckpt, hidden, l.mixer.norm);
  const Value mixed = body(g, ctx, l.mixer, normed_1);
  const bool shared = l.ffn.placement == NormPlacement::shared;
  const Value normed_2 = shared ? normed_1 : apply_norm(g, ctx.ckpt, hidden, l.ffn.norm);
  const Value fed = body(g, ctx, l.ffn, normed_2);
  if (l.sum == ParallelSum::residual_first) {
    const Value partial = g.add(hidden, mixed, l.mixer.residual + "/Add");
    return g.add(partial, fed, l.ffn.residual + "/Add");
  }
  const Value branches = g.add(mixed, fed, l.ffn.residual + "/Add");
  return g.add(branches, hidden, l.mixer.residual + "/Add");
}

}  // namespace

void declare_layer(TensorTable& t, const ModelDims& d, const LayerDescription& l) {
  check_placements(l);
  declare_branch(t, d, l.mixer);
  declare_branch(t, d, l.ffn);
}

void request_layer_inputs(GraphBuilder& g, const DecoderContext& ctx, const LayerDescription& l) {
  for (const BranchDescription* b : {&l.mixer, &l.ffn})
    std::visit([&](const auto& body) { request_inputs(g, ctx, body); }, b->body);
}

Value build_layer(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const LayerDescription& l) {
  check_placements(l);
  if (l.parallel) return parallel_layer(g, ctx, hidden, l);
  return residual_branch(g, ctx, residual_branch(g, ctx, hidden, l.mixer), l.ffn);
}

}  // namespace llm2hef::sdk
