#include "llm2hef/sdk/llama_family.hpp"

#include <cmath>

#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/rope.hpp"

namespace llm2hef::sdk {

LlamaFamily read_llama_family(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  LlamaFamily m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  m.intermediate = c.get_size("intermediate_size");
  m.rms_eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", 1e-6, kNormEpsilon));
  read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
  if (c.find_bool("mlp_bias").value_or(false)) throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  // A window would have to live in the runtime's mask, which has no such
  // setting: exact only when the cache fits in it (checked in the plan).
  m.sliding = read_sliding_window(c, m.layers);
  if (c.find_bool("attention_bias").value_or(false)) {
    m.qkv_bias = m.o_bias = true;
    m.rewrites.push_back("attention biases on q/k/v/o projections");
  }
  m.inv_freq = rope_inv_freq(c, m.head_dim, m.rewrites);
  m.rope_layers.assign(static_cast<size_t>(m.layers), true);

  m.lm_head = read_lm_head(ckpt, m.embed(), m.vocab, m.hidden, m.rewrites);
  note_gqa_and_rope_rewrite(m.rewrites, m.heads, m.kv_heads);
  return m;
}

void check_llama_family_tensors(const Checkpoint& ckpt, const LlamaFamily& m) {
  // Every tensor the graph will read, against the shape config.json implies,
  // before anything is built: a config that disagrees with its weights (a
  // wrong head_dim or intermediate_size) would otherwise export a graph sized
  // from the config, or build constants sized from it.
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    ckpt.expect(p + "input_layernorm.weight", {m.hidden});
    ckpt.expect(p + "post_attention_layernorm.weight", {m.hidden});
    ckpt.expect(p + "self_attn.q_proj.weight", {q, m.hidden});
    ckpt.expect(p + "self_attn.k_proj.weight", {kv, m.hidden});
    ckpt.expect(p + "self_attn.v_proj.weight", {kv, m.hidden});
    ckpt.expect(p + "self_attn.o_proj.weight", {m.hidden, q});
    if (m.qkv_bias) {
      ckpt.expect(p + "self_attn.q_proj.bias", {q});
      ckpt.expect(p + "self_attn.k_proj.bias", {kv});
      ckpt.expect(p + "self_attn.v_proj.bias", {kv});
    }
    if (m.o_bias) ckpt.expect(p + "self_attn.o_proj.bias", {m.hidden});
    if (m.qk_norm) {
      ckpt.expect(p + "self_attn.q_norm.weight", {m.head_dim});
      ckpt.expect(p + "self_attn.k_norm.weight", {m.head_dim});
    }
    ckpt.expect(p + "mlp.gate_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.up_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.down_proj.weight", {m.hidden, m.intermediate});
  }
  ckpt.expect("model.norm.weight", {m.hidden});
  // Tensors another member reads but this adapter would leave out (a forced
  // --adapter llama on a Qwen2 or Qwen3 checkpoint would drop them silently).
  const std::string p = m.layer(0) + "self_attn.";
  const std::pair<std::string, bool> read[] = {{p + "q_proj.bias", m.qkv_bias}, {p + "o_proj.bias", m.o_bias},
                                               {p + "q_norm.weight", m.qk_norm}};
  for (const auto& [tensor, used] : read)
    if (!used && ckpt.has(tensor))
      throw llm2hef::Unsupported(ckpt.info(tensor).file.string() + ": tensor '" + tensor +
                                 "' is not read by this adapter (another Llama-family member's: pass --adapter to choose it)");
}

void refuse_unread_llama_family_keys(const Checkpoint& ckpt, const LlamaFamily& m) {
  // The one forward-key table (sdk/forward_keys.hpp): what every member reads,
  // plus what this member's customize() read (SmolLM3's NoPE keys, Granite's
  // multipliers); anything else that changes the forward pass is refused.
  std::vector<std::string> applied = llama_family_applied_keys();
  if (m.nope_read) applied.insert(applied.end(), {"no_rope_layers", "no_rope_layer_interval"});
  if (m.multipliers.any())
    applied.insert(applied.end(), {"embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling"});
  refuse_unapplied_forward_keys(ckpt.config(), applied);
}

Plan llama_family_plan(const LlamaFamily& m, const ExportOptions& opt) {
  Plan p = rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                             m.embed(), opt, rope_theta_resource(m.inv_freq), m.rewrites, m.max_positions);
  for (const std::string& line : m.multipliers.rewrites()) p.rewrites.push_back(line);
  apply_sliding_window(p, opt, m.sliding);
  return p;
}

void build_llama_family_graph(const Checkpoint& ckpt, const Plan& plan, const LlamaFamily& m, GraphBuilder& g) {
  const float score_divisor = m.multipliers.score_divisor(m.head_dim);
  const float residual_scale = static_cast<float>(m.multipliers.residual);
  auto model = g.scope("model");
  const DecoderInputs io = decoder_inputs(g, plan);
  Value embeds = io.runtime.embeds;
  if (m.multipliers.embedding != 1.0) {
    auto s = g.scope("embed_scale");
    embeds = scale_by(g, embeds, static_cast<float>(m.multipliers.embedding), "embedding_multiplier");
  }
  const Value hidden = decoder_layers(g, ckpt, embeds, m.layers, [&](int64_t i) {
    const std::string p = m.layer(i);
    auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, m.rms_eps}; };
    const AttentionBlockSpec attn{.prefix = p + "self_attn.",
                                  .q_norm = m.qk_norm ? "q_norm" : "",
                                  .k_norm = m.qk_norm ? "k_norm" : "",
                                  .out_proj = "o_proj",
                                  .qkv_bias = m.qkv_bias,
                                  .out_bias = m.o_bias,
                                  .rope = m.rope_layers[static_cast<size_t>(i)],
                                  .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, score_divisor},
                                  .norm_eps = m.rms_eps,
                                  .out_scale = residual_scale};
    const SwigluSpec mlp{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight",
                         "gate_proj", "up_proj", "down_proj", residual_scale};
    return DecoderLayer{{norm("input_layernorm"), "attn", attention_mixer(ckpt, io, attn), "attn_residual"},
                        {norm("post_attention_layernorm"), "mlp", swiglu_ffn(ckpt, mlp), "mlp_residual"}};
  });
  decoder_tail(g, ckpt, hidden,
               TailSpec{NormSpec{"norm", "model.norm.weight", std::nullopt, m.rms_eps}, m.lm_head.tensor,
                        static_cast<float>(m.multipliers.logits)});
}

}  // namespace llm2hef::sdk
