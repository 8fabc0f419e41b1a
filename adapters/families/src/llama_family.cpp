#include "llm2hef/families/llama_family.hpp"

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace llm2hef::families {

DecoderModel describe_llama_family(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  DecoderModel m;
  const DecoderDims d = read_decoder_dims(c);
  m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, c.get_size("intermediate_size")};
  m.max_positions = d.max_positions;
  const float eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", 1e-6, kNormEpsilon));
  read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
  if (c.find_bool("mlp_bias").value_or(false))
    throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  // A window would have to live in the runtime's mask, which has no such
  // setting: exact only when the cache fits in it (the plan's policy).
  m.sliding_window = read_sliding_window(c, d.layers);
  const bool attention_bias = c.find_bool("attention_bias").value_or(false);
  if (attention_bias) m.rewrites.push_back("attention biases on q/k/v/o projections");
  m.theta = rope_theta_resource(rope_inv_freq(c, d.head_dim, m.rewrites));

  m.embedding = kHfEmbedTokens;
  const LmHead head = describe_lm_head(m.tensors, ckpt, m.embedding, d.vocab, d.hidden, m.rewrites);
  note_gqa_and_rope_rewrite(m.rewrites, d.heads, d.kv_heads);

  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = hf_layer_prefix(i);
    auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, eps}; };
    const AttentionBlockSpec attn{.prefix = p + "self_attn.",
                                  .out_proj = "o_proj",
                                  .qkv_bias = attention_bias,
                                  .out_bias = attention_bias,
                                  .norm_eps = eps};
    const SwigluSpec mlp = hf_gated_mlp(p);
    m.layers.push_back({{norm("input_layernorm"), "attn", AttentionMixer{attn}, "attn_residual"},
                        {norm("post_attention_layernorm"), "mlp", mlp, "mlp_residual"}});
  }
  m.tail = TailSpec{NormSpec{"norm", kHfFinalNorm, std::nullopt, eps}, head.tensor};
  for (const char* other : {"self_attn.q_proj.bias", "self_attn.o_proj.bias", "self_attn.q_norm.weight"})
    m.tensors.refuse("model.layers.0." + std::string(other),
                     " (another Llama-family member's: pass --adapter to choose it)");
  return m;
}

std::vector<std::string> llama_family_applied_keys(std::vector<std::string> member_keys) {
  std::vector<std::string> keys = {"attention_bias", "sliding_window", "use_sliding_window", "layer_types"};
  keys.insert(keys.end(), member_keys.begin(), member_keys.end());
  return keys;
}

void apply_scalar_multipliers(DecoderModel& m, const ScalarMultipliers& mult) {
  m.score_divisor = mult.score_divisor(m.dims.head_dim);
  const float residual = static_cast<float>(mult.residual);
  for (LayerDescription& l : m.layers) {
    attention_spec(l).out_scale = residual;
    std::get<SwigluSpec>(l.ffn.body).down_scale = residual;
  }
  m.tail.logit_scale = static_cast<float>(mult.logits);
  if (mult.embedding != 1.0)
    m.embed = [factor = static_cast<float>(mult.embedding)](GraphBuilder& g, const DecoderContext&, const Value& x) {
      auto s = g.scope("embed_scale");
      return scale_by(g, x, factor, "embedding_multiplier");
    };
  for (const std::string& line : mult.rewrites()) m.rewrites.push_back(line);
}

}  // namespace llm2hef::families
