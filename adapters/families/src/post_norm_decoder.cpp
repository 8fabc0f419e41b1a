#include "llm2hef/families/post_norm_decoder.hpp"

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::families {

DecoderModel describe_post_norm_decoder(const Checkpoint& ckpt, double default_eps, NormPlacement placement) {
  if (placement != NormPlacement::sandwich && placement != NormPlacement::post)
    throw InternalError("describe_post_norm_decoder: the norms are placed as a sandwich or after the body only");
  const JsonFile& c = ckpt.config();
  DecoderModel m;
  const DecoderDims d = read_decoder_dims(c);
  m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, c.get_size("intermediate_size")};
  m.max_positions = d.max_positions;
  const float eps = static_cast<float>(checked_number_or(c, "rms_norm_eps", default_eps, kNormEpsilon));
  // No released Gemma 2/3 or OLMo 2 has biases, and no fixture could check
  // them: refused rather than guessed.
  if (c.find_bool("attention_bias").value_or(false))
    throw Unsupported(c.where("attention_bias") + ": true is not supported (q/k/v/o biases)");
  if (c.find_bool("mlp_bias").value_or(false))
    throw Unsupported(c.where("mlp_bias") + ": MLP biases are not supported");
  m.embedding = kHfEmbedTokens;
  const LmHead head = describe_lm_head(m.tensors, ckpt, m.embedding, d.vocab, d.hidden, m.rewrites);
  note_gqa_and_rope_rewrite(m.rewrites, d.heads, d.kv_heads);

  for (int64_t i = 0; i < d.layers; ++i) {
    const std::string p = hf_layer_prefix(i);
    auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, eps}; };
    const AttentionBlockSpec attention{.prefix = p + "self_attn.", .out_proj = "o_proj", .norm_eps = eps};
    // The norm before the body and the one after it, or the one after only.
    auto branch = [&](const std::string& before, const std::string& after, const char* scope, BranchBody body,
                      const char* residual) {
      if (placement == NormPlacement::post) return BranchDescription{norm(after), scope, body, residual, placement};
      return BranchDescription{norm(before), scope, body, residual, placement, norm(after)};
    };
    m.layers.push_back(
        {branch("input_layernorm", "post_attention_layernorm", "attn", AttentionMixer{attention}, "attn_residual"),
         branch("pre_feedforward_layernorm", "post_feedforward_layernorm", "mlp", hf_gated_mlp(p), "mlp_residual")});
  }
  m.tail = TailSpec{NormSpec{"norm", kHfFinalNorm, std::nullopt, eps}, head.tensor};
  m.sliding_window = {0, std::vector<bool>(static_cast<size_t>(d.layers), false),
                      "config.json: field 'sliding_window'"};
  m.sliding_window_band = true;
  return m;
}

void set_norm_weight_offset(DecoderModel& m, float offset) {
  auto set = [offset](NormSpec& n) { n.weight_offset = offset; };
  for (LayerDescription& l : m.layers) {
    for (BranchDescription* b : {&l.mixer, &l.ffn}) {
      set(b->norm);
      if (b->post_norm) set(*b->post_norm);
    }
    attention_spec(l).norm_weight_offset = offset;
  }
  if (m.tail.final_norm) set(*m.tail.final_norm);
}

}  // namespace llm2hef::families
