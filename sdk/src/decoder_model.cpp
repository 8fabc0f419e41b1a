#include "llm2hef/sdk/decoder_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <utility>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"
#include "llm2hef/sdk/sliding_window_band.hpp"

namespace llm2hef::sdk {

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

TensorTable described_tensors(const DecoderModel& m) {
  TensorTable t = m.tensors;
  ModelDims residual = m.dims;  // the layers' sizes: hidden is the residual stream's width
  if (m.residual_width > 0) residual.hidden = m.residual_width;
  for (const LayerDescription& l : m.layers) declare_layer(t, residual, l);
  if (m.tail.final_norm) t.norm(*m.tail.final_norm, residual.hidden);
  if (m.tail.lm_head_bias) t.add(*m.tail.lm_head_bias, {m.dims.vocab});
  return t;
}

// ---- the adapter ----

namespace {

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
  DecoderContext ctx(ckpt, io, plan, *model,
                     {plan.cache_size, d.heads, d.kv_heads, d.head_dim, divisor, model->attention_softcap});
  // What the layers' bodies read once per graph, made here, before the
  // embedding and the first layer (DecoderContext::input).
  for (size_t i = 0; i < model->layers.size(); ++i) {
    ctx.layer = static_cast<int64_t>(i);
    request_layer_inputs(g, ctx, model->layers[i]);
  }
  ctx.layer = -1;
  Value hidden = model->embed ? model->embed(g, ctx, io.runtime.embeds) : io.runtime.embeds;
  for (size_t i = 0; i < model->layers.size(); ++i) {
    auto layer_scope = g.scope("layers." + std::to_string(i));
    ctx.layer = static_cast<int64_t>(i);
    hidden = build_layer(g, ctx, hidden, model->layers[i]);
  }
  ctx.layer = -1;
  decoder_tail(g, ckpt, hidden, model->tail);
}

}  // namespace llm2hef::sdk
