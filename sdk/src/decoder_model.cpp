#include "llm2hef/sdk/decoder_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/rope_bases.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"
#include "llm2hef/sdk/sliding_window_band.hpp"

namespace llm2hef::sdk {

// ---- the tensor table ----

const std::string& TensorTable::add(std::string name, std::vector<int64_t> shape) {
  rows_.push_back({std::move(name), std::move(shape)});
  return rows_.back().name;
}

void TensorTable::add_optional(std::string name, std::vector<int64_t> shape) {
  rows_.push_back({std::move(name), std::move(shape), TensorRow::Presence::optional});
}

void TensorTable::refuse(std::string name, std::string why) {
  rows_.push_back({std::move(name), {}, TensorRow::Presence::refused, std::move(why)});
}

void TensorTable::norm(const NormSpec& spec, int64_t width) {
  if (spec.weight.empty()) return;  // LayerNorm without elementwise affine
  add(spec.weight, {width});
  if (spec.bias && !spec.bias->empty()) add(*spec.bias, {width});
}

void TensorTable::linear(const LinearSpec& spec, int64_t out, int64_t in) {
  add(spec.weight, spec.layout == WeightLayout::out_in ? std::vector<int64_t>{out, in} : std::vector<int64_t>{in, out});
  if (spec.bias) add(*spec.bias, {out});
}

void TensorTable::attention(const AttentionBlockSpec& spec, const ModelDims& d, bool qkv_projections,
                            bool rms_qk_norm) {
  const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
  const std::pair<const char*, int64_t> projections[] = {{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}};
  if (qkv_projections) {
    for (const auto& [name, rows] : projections) add(spec.prefix + name + ".weight", {rows, d.hidden});
    if (spec.qkv_bias)
      for (const auto& [name, rows] : projections) add(spec.prefix + name + ".bias", {rows});
  }
  add(spec.prefix + spec.out_proj + ".weight", {d.hidden, q});
  if (spec.out_bias) add(spec.prefix + spec.out_proj + ".bias", {d.hidden});
  if (!spec.q_norm.empty() && rms_qk_norm && !spec.q_norm_fn) {
    add(spec.prefix + spec.q_norm + ".weight", {spec.qk_norm_full_width ? q : d.head_dim});
    add(spec.prefix + spec.k_norm + ".weight", {spec.qk_norm_full_width ? kv : d.head_dim});
  }
}

void TensorTable::swiglu(const SwigluSpec& spec, int64_t hidden, int64_t intermediate) {
  if (spec.gate_weight == spec.up_weight) {
    add(spec.gate_weight, {2 * intermediate, hidden});  // one fused gate_up tensor (Phi-3)
  } else {
    add(spec.gate_weight, {intermediate, hidden});
    add(spec.up_weight, {intermediate, hidden});
  }
  add(spec.down_weight, {hidden, intermediate});
}

void TensorTable::gelu_mlp(const GeluMlpSpec& spec, int64_t hidden, int64_t intermediate) {
  linear(spec.up, intermediate, hidden);
  linear(spec.down, hidden, intermediate);
}

void TensorTable::check(const Checkpoint& ckpt) const {
  // Refused rows last, so that a shape that disagrees with config.json is
  // reported before a tensor of another family.
  std::vector<const TensorRow*> order;
  for (const TensorRow& row : rows_)
    if (row.presence != TensorRow::Presence::refused) order.push_back(&row);
  for (const TensorRow& row : rows_)
    if (row.presence == TensorRow::Presence::refused) order.push_back(&row);
  auto read_by_another_row = [&](const std::string& name) {
    for (const TensorRow& row : rows_)
      if (row.presence != TensorRow::Presence::refused && row.name == name) return true;
    return false;
  };
  for (const TensorRow* row : order) {
    switch (row->presence) {
      case TensorRow::Presence::required: ckpt.expect(row->name, row->shape); break;
      case TensorRow::Presence::optional:
        if (ckpt.has(row->name)) ckpt.expect(row->name, row->shape);
        break;
      case TensorRow::Presence::refused:
        if (ckpt.has(row->name) && !read_by_another_row(row->name))
          throw Unsupported(ckpt.info(row->name).file.string() + ": tensor '" + row->name +
                            "' is not read by this adapter" + row->refusal);
        break;
    }
  }
}

LmHead describe_lm_head(TensorTable& table, const Checkpoint& ckpt, const std::string& embedding, int64_t vocab,
                        int64_t hidden, std::vector<std::string>& rewrites) {
  table.add(embedding, {vocab, hidden});
  table.add_optional("lm_head.weight", {vocab, hidden});
  LmHead head = choose_lm_head(ckpt, embedding, vocab, hidden);
  rewrites.push_back(head.tied ? "tied lm_head written as its own tensor after a last-position slice"
                               : "lm_head after a last-position slice");
  return head;
}

OptionSpec sliding_window_option() {
  return {kSlidingWindowOption,
          {"refuse", "band"},
          "refuse",
          "when --cache exceeds sliding_window: refuse (the largest exact cache is the window), or band = a constant "
          "band in the sliding layers (exact in fp32, unproven on the DFC)"};
}

AttentionBlockSpec& attention_spec(LayerDescription& layer) {
  if (auto* a = std::get_if<AttentionMixer>(&layer.mixer.body)) return a->spec;
  throw InternalError("decoder description: the layer's mixer is not attention");
}

namespace {

void declare_branch(TensorTable& t, const BranchDescription& b, const ModelDims& d) {
  if (b.residual_norm) {
    t.norm(*b.residual_norm, d.hidden);
  } else if (b.pre_norm) {
    t.norm(b.norm, d.hidden);
  }
  if (const auto* a = std::get_if<AttentionMixer>(&b.body)) {
    // A fused q/k/v tensor is the description's to declare (its projector splits it).
    t.attention(a->spec, d, !a->fused_qkv, !a->head_layer_norms);
    if (a->head_layer_norms) {
      const auto& n = *a->head_layer_norms;
      for (const auto* names : {&n.q_weights, &n.q_biases, &n.k_weights, &n.k_biases})
        for (const std::string& name : *names) t.add(name, {d.head_dim});
    }
  } else if (const auto* c = std::get_if<ShortConvSpec>(&b.body)) {
    t.add(c->in_proj, {3 * c->hidden, c->hidden});
    t.add(c->conv, {c->hidden, 1, c->kernel});
    t.add(c->out_proj, {c->hidden, c->hidden});
    if (c->in_proj_bias) t.add(*c->in_proj_bias, {3 * c->hidden});
    if (c->conv_bias) t.add(*c->conv_bias, {c->hidden});
    if (c->out_proj_bias) t.add(*c->out_proj_bias, {c->hidden});
  } else if (const auto* s = std::get_if<SwigluSpec>(&b.body)) {
    t.swiglu(*s, d.hidden, d.intermediate);
  } else if (const auto* geglu = std::get_if<GegluMlp>(&b.body)) {
    t.swiglu(geglu->spec, d.hidden, d.intermediate);
  } else if (const auto* g = std::get_if<GeluMlpSpec>(&b.body)) {
    t.gelu_mlp(*g, d.hidden, d.intermediate);
  } else if (const auto* r = std::get_if<ReluMlpSpec>(&b.body)) {
    t.linear(r->up, d.intermediate, d.hidden);
    t.linear(r->down, d.hidden, d.intermediate);
  }  // a custom body's tensors are declared by its description
  if (b.post_norm) t.norm(*b.post_norm, d.hidden);
}

}  // namespace

TensorTable described_tensors(const DecoderModel& m) {
  TensorTable t = m.tensors;
  ModelDims residual = m.dims;  // the layers' sizes: hidden is the residual stream's width
  if (m.residual_width > 0) residual.hidden = m.residual_width;
  for (const LayerDescription& l : m.layers) {
    declare_branch(t, l.mixer, residual);
    declare_branch(t, l.ffn, residual);
  }
  if (m.tail.final_norm) t.norm(*m.tail.final_norm, residual.hidden);
  if (m.tail.lm_head_bias) t.add(*m.tail.lm_head_bias, {m.dims.vocab});
  return t;
}

// ---- the adapter ----

namespace {

Block body_block(const DecoderContext& ctx, const BranchBody& body, bool sliding) {
  if (const auto* a = std::get_if<AttentionMixer>(&body)) {
    AttentionBlockSpec spec = a->spec;
    spec.shape = ctx.attention;
    if (sliding) spec.shape.window_band = ctx.window_band;
    if (a->head_layer_norms) {
      const auto& n = *a->head_layer_norms;
      const int64_t d = spec.shape.head_dim;
      spec.q_norm_fn = head_layer_norm_fn(ctx.ckpt, n.q_weights, n.q_biases, spec.shape.heads, d, spec.norm_eps);
      spec.k_norm_fn = head_layer_norm_fn(ctx.ckpt, n.k_weights, n.k_biases, spec.shape.kv_heads, d, spec.norm_eps);
    }
    if (a->fused_qkv) {
      QkvProjector project = [&ckpt = ctx.ckpt, fused = a->fused_qkv](GraphBuilder& g, const Value& x, int part) {
        return fused(g, ckpt, x, part);
      };
      return fused_qkv_attention_mixer(ctx.ckpt, ctx.io, std::move(spec), std::move(project));
    }
    const PeTables& tables = ctx.pe_by_base.at(static_cast<size_t>(a->rope_base));
    return [&ckpt = ctx.ckpt, &mask = ctx.io.runtime.mask, &tables, spec = std::move(spec)](GraphBuilder& g,
                                                                                            const Value& x) {
      return attention_block(g, ckpt, x, mask, tables, spec);
    };
  }
  if (const auto* c = std::get_if<ShortConvSpec>(&body)) return short_conv_mixer(ctx.ckpt, ctx.shifts, *c);
  if (const auto* s = std::get_if<SwigluSpec>(&body)) return swiglu_ffn(ctx.ckpt, *s);
  if (const auto* geglu = std::get_if<GegluMlp>(&body))
    return
        [&ckpt = ctx.ckpt, spec = geglu->spec](GraphBuilder& g, const Value& x) { return geglu_mlp(g, ckpt, x, spec); };
  if (const auto* m = std::get_if<GeluMlpSpec>(&body)) return gelu_ffn(ctx.ckpt, *m);
  if (const auto* r = std::get_if<ReluMlpSpec>(&body)) return relu_ffn(ctx.ckpt, *r);
  const CustomBody& custom = std::get<CustomBody>(body);
  return [&ctx, custom](GraphBuilder& g, const Value& x) { return custom(g, ctx, x); };
}

Branch branch(const DecoderContext& ctx, const BranchDescription& b, bool sliding) {
  return Branch{b.norm,      b.scope,   body_block(ctx, b.body, sliding), b.residual, b.residual_norm,
                b.post_norm, b.pre_norm};
}

// The SDK's window policy (exact at --cache <= window, else refused), unless
// the description offers the band and the user asks for it (exact in fp32,
// unproven on the DFC).
void settle_sliding_window(Plan& p, const ExportOptions& opt, const DecoderModel& m) {
  const SlidingWindow& window = m.sliding_window;
  const auto chosen = opt.adapter_options.find(kSlidingWindowOption);
  const bool band = m.sliding_window_band && chosen != opt.adapter_options.end() && chosen->second == "band";
  if (!band || opt.cache_size <= window.window) {
    apply_sliding_window(p, opt, window,
                         m.sliding_window_band ? "--sliding-window band: exact in fp32 but unproven on the DFC" : "");
    return;
  }
  if (!window.any()) return;
  const std::string w = std::to_string(window.window), n = std::to_string(opt.cache_size);
  p.options[kSlidingWindowOption] = "band";
  // The band has the scores' shape (sliding_window_band.hpp): its size grows
  // with the heads and the square of the cache, so the export says it.
  const int64_t bytes = sliding_window_band_bytes(m.dims.heads, opt.cache_size);
  const bool mib = bytes >= 1024 * 1024;
  char size[64];
  std::snprintf(size, sizeof size, "%lld bytes, %.1f %s", static_cast<long long>(bytes),
                static_cast<double>(bytes) / (mib ? 1024.0 * 1024.0 : 1024.0), mib ? "MiB" : "KiB");
  const std::string constant = "one constant band [1, " + std::to_string(m.dims.heads) + ", " + n + ", " + n + "] (" +
                               size + " in float32; the scores' shape, no broadcast over heads)";
  p.rewrites.push_back("sliding-window layers (" + window.layer_list() + "): " + constant + " blocks keys " + w +
                       " or more positions back, added after the shared mask (--sliding-window band)");
  p.notes.push_back("--cache " + n + " > sliding_window " + w + ": the window is " + constant +
                    " added to the scores of the sliding layers; exact in fp32 on the exported graph, UNPROVEN on "
                    "the DFC (that it keeps the band aligned with the rows of its prefill and token-by-token "
                    "groups); --cache " +
                    w + " or less needs no band");
}

}  // namespace

int64_t default_cache_size(const DecoderModel& m) {
  int64_t cache = kRuntimeDefaultCacheSize;
  for (const int64_t limit :
       {m.max_positions, m.largest_exact_cache, m.sliding_window.any() ? m.sliding_window.window : 0})
    if (limit >= 2) cache = std::min(cache, limit);
  return cache;
}

Plan DecoderAdapter::plan(const Checkpoint& ckpt, const ExportOptions& requested) const {
  refuse_unapplied_forward_keys(ckpt.config(), info().applied_keys);
  auto model = std::make_shared<DecoderModel>(describe(ckpt, DescribeOptions{requested.adapter_options}));
  described_tensors(*model).check(ckpt);
  if (static_cast<int64_t>(model->layers.size()) != model->dims.layers)
    throw InternalError("decoder description: " + std::to_string(model->layers.size()) + " layers described for " +
                        std::to_string(model->dims.layers));
  ExportOptions options = requested;
  if (options.cache_size == 0) options.cache_size = default_cache_size(*model);
  const int64_t exact = model->largest_exact_cache;
  if (exact > 0 && options.cache_size > exact)
    throw Unsupported(model->largest_exact_cache_reason + "; --cache " + std::to_string(options.cache_size) +
                      " is too large, the largest exact cache is " + std::to_string(exact) + " (pass --cache " +
                      std::to_string(exact) + " or less)");
  if (model->for_cache) model->for_cache(*model, options.cache_size);
  Plan p = decoder_plan(model->dims, model->embedding, options);
  p.cache_size = options.cache_size;
  p.theta = model->theta;
  p.rewrites = model->rewrites;
  p.notes = model->notes;
  note_cache_beyond_positions(p, options, model->max_positions);
  p.options = model->options;
  p.cache_cost = model->cache_cost;
  settle_sliding_window(p, options, *model);
  p.adapter_state = std::move(model);
  return p;
}

void DecoderAdapter::build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const {
  // plan() made the description; the host hands the plan back unchanged.
  const auto* model = static_cast<const DecoderModel*>(plan.adapter_state.get());
  if (!model)
    throw InternalError("build_graph: the plan carries no decoder description (not made by this adapter's plan())");
  const ModelDims& d = model->dims;
  // The attention shape of every layer, in this one place.
  const float divisor =
      model->score_divisor > 0 ? model->score_divisor : static_cast<float>(std::sqrt(static_cast<double>(d.head_dim)));
  auto scope = g.scope("model");
  const DecoderInputs io = decoder_inputs(g, plan);
  // Short-conv mixers share one set of shift matrices, built from the mask
  // before the first layer.
  CausalShifts shifts;
  for (const LayerDescription& l : model->layers)
    if (const auto* conv = std::get_if<ShortConvSpec>(&l.mixer.body)) {
      shifts = causal_shifts(g, io.runtime.mask, plan.cache_size, conv->kernel);
      break;
    }
  std::vector<PeTables> pe_by_base = select_rope_bases(g, io.pe, model->rope_bases, d.heads, d.kv_heads, d.head_dim);
  std::optional<Value> band;
  if (plan.options.value(kSlidingWindowOption, "") == "band")
    band = sliding_window_band(g, d.heads, plan.cache_size, model->sliding_window.window);
  const DecoderContext ctx{ckpt,
                           io,
                           {plan.cache_size, d.heads, d.kv_heads, d.head_dim, divisor, model->attention_softcap},
                           std::move(shifts),
                           std::move(pe_by_base),
                           band};
  const Value embeds = model->embed ? model->embed(g, ctx, io.runtime.embeds) : io.runtime.embeds;
  const Value hidden = decoder_layers(g, ckpt, embeds, d.layers, [&](int64_t i) {
    const LayerDescription& l = model->layers[static_cast<size_t>(i)];
    const auto layer = static_cast<size_t>(i);
    const bool sliding = layer < model->sliding_window.layers.size() && model->sliding_window.layers[layer];
    return DecoderLayer{branch(ctx, l.mixer, sliding), branch(ctx, l.ffn, sliding), l.parallel, l.sum};
  });
  decoder_tail(g, ckpt, hidden, model->tail);
}

}  // namespace llm2hef::sdk
