#include "llm2hef/sdk/post_norm_decoder.hpp"

#include <cmath>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope_bases.hpp"

namespace llm2hef::sdk {

PostNormDecoder read_post_norm_decoder(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  PostNormDecoder m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  m.intermediate = c.get_size("intermediate_size");
  m.rms_eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", 1e-6, kNormEpsilon));
  // No released Gemma 2/3 or OLMo 2 has biases, and no fixture could check
  // them: refused rather than guessed.
  if (c.find_bool("attention_bias").value_or(false))
    throw Unsupported(c.where("attention_bias") + ": true is not supported (q/k/v/o biases)");
  if (c.find_bool("mlp_bias").value_or(false)) throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  m.score_divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
  m.lm_head = describe_lm_head(m.tensors, ckpt, m.embed(), m.vocab, m.hidden, m.rewrites);
  note_gqa_and_rope_rewrite(m.rewrites, m.heads, m.kv_heads);
  return m;
}

DecoderModel describe_post_norm_decoder(const PostNormDecoder& m) {
  if (m.rope_bases.empty() || m.layer_base.size() != static_cast<size_t>(m.layers))
    throw InternalError("post-norm decoder: RoPE bases not set for every layer");
  DecoderModel d;
  d.dims = {m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate};
  d.max_positions = m.max_positions;
  d.embedding = m.embed();
  d.theta = rope_bases_theta(m.rope_bases);
  d.rope_bases = static_cast<int64_t>(m.rope_bases.size());
  d.score_divisor = m.score_divisor;
  d.attention_softcap = m.attn_softcap;
  d.tensors = m.tensors;
  d.applied_keys = m.applied_keys;
  d.rewrites = m.rewrites;
  d.notes = m.notes;
  d.sliding_window = {m.sliding_window, m.sliding_layers, "config.json: field 'sliding_window'"};
  if (d.sliding_window.layers.size() != static_cast<size_t>(m.layers))
    d.sliding_window.layers.assign(static_cast<size_t>(m.layers), false);
  d.sliding_window_band = true;
  if (m.embed_scale > 0)
    // HF multiplies the looked-up rows (Gemma's scaled embedding); the
    // runtime feeds them raw from embeddings.bin, so the graph does it.
    d.embed = [scale = m.embed_scale](GraphBuilder& g, const DecoderContext&, const Value& embeds) {
      auto s = g.scope("embed_tokens");
      const Value factor = g.scalar("embed_scale", scale);
      return g.mul(embeds, factor);
    };
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    auto norm = [&](const std::string& name) {
      return NormSpec{name, p + name + ".weight", std::nullopt, m.rms_eps, m.norm_weight_offset};
    };
    const bool qk = m.qk_norm != QkNorm::none;
    AttentionMixer attention{{.prefix = p + "self_attn.",
                              .q_norm = qk ? "q_norm" : "",
                              .k_norm = qk ? "k_norm" : "",
                              .out_proj = "o_proj",
                              .norm_eps = m.rms_eps,
                              .qk_norm_full_width = m.qk_norm == QkNorm::full_width,
                              .norm_weight_offset = m.norm_weight_offset}};
    attention.rope_base = m.layer_base.at(static_cast<size_t>(i));
    const SwigluSpec mlp{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight",
                         "gate_proj", "up_proj", "down_proj"};
    d.layers.push_back({BranchDescription{.norm = norm("input_layernorm"),
                                          .scope = "attn",
                                          .body = attention,
                                          .residual = "attn_residual",
                                          .post_norm = norm("post_attention_layernorm"),
                                          .pre_norm = m.pre_norms},
                        BranchDescription{.norm = norm("pre_feedforward_layernorm"),
                                          .scope = "mlp",
                                          .body = m.geglu ? BranchBody{GegluMlp{mlp}} : BranchBody{mlp},
                                          .residual = "mlp_residual",
                                          .post_norm = norm("post_feedforward_layernorm"),
                                          .pre_norm = m.pre_norms}});
  }
  d.tail = TailSpec{.final_norm = NormSpec{"norm", "model.norm.weight", std::nullopt, m.rms_eps, m.norm_weight_offset},
                    .lm_head = m.lm_head.tensor,
                    .logit_softcap = m.final_softcap};
  return d;
}

}  // namespace llm2hef::sdk
