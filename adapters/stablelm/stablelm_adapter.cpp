// StableLM 2 (StableLmForCausalLM). A Llama-shaped decoder (SwiGLU, GQA)
// with what differs, all exact:
// - LayerNorm (weight and bias) instead of RMSNorm;
// - partial rotary (partial_rotary_factor, default 0.25) through zero theta
//   entries (sdk/partial_rotary.hpp);
// - use_qkv_bias: biases on q/k/v (never on o_proj);
// - qk_layernorm: one bias-free LayerNorm per head (q_layernorm.norms.<h>),
//   through segment matrices (sdk/head_norm.hpp);
// - use_parallel_residual: (h + attn(ln(h))) + mlp(ln(h)), HF's grouping,
//   with the one input_layernorm.
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

class StableLmAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "stablelm";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "StableLM 2 (LayerNorm, partial rotary, optional qkv bias, QK LayerNorm, parallel residual)",
            {"StableLmForCausalLM"},
            {"stablelm"},
            {},
            {"qk_layernorm", "use_qkv_bias", "use_parallel_residual", "partial_rotary_factor"}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const DecoderDims d = read_decoder_dims(c);
    if (c.has("head_dim") && d.head_dim * d.heads != d.hidden)
      throw Unsupported(c.where("head_dim") + ": StableLM derives head_dim from hidden_size / num_attention_heads");
    m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, c.get_size("intermediate_size")};
    m.max_positions = d.max_positions;
    const float eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
    read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
    const bool qkv_bias = c.find_bool("use_qkv_bias").value_or(false);
    const bool qk_layernorm = c.find_bool("qk_layernorm").value_or(false);
    const bool parallel = c.find_bool("use_parallel_residual").value_or(false);
    const PartialRope rope = read_partial_rope(c, d.head_dim, {.default_factor = 0.25}, m.rewrites);
    m.theta = rope.theta;
    if (qkv_bias) m.rewrites.push_back("q/k/v biases (use_qkv_bias)");
    if (qk_layernorm) m.rewrites.push_back("per-head qk_layernorm through constant segment matrices, before RoPE");
    m.rewrites.push_back(parallel ? "parallel residual: (h + attention(input_layernorm(h))) + mlp(input_layernorm(h))"
                                  : "sequential residual (use_parallel_residual false)");
    m.embedding = kHfEmbedTokens;
    const LmHead head = describe_lm_head(m.tensors, ckpt, m.embedding, d.vocab, d.hidden, m.rewrites);

    for (int64_t i = 0; i < d.layers; ++i) {
      const std::string p = hf_layer_prefix(i);
      auto norm = [&](const std::string& name) {
        return NormSpec{name, p + name + ".weight", p + name + ".bias", eps};
      };
      AttentionMixer attn{{.prefix = p + "self_attn.",
                           .out_proj = "o_proj",
                           .qkv_bias = qkv_bias,
                           .norm_eps = eps,
                           .rotary_dim = rope.rotary_dim}};
      if (qk_layernorm) {
        // StableLmLayerNormPerHead: one bias-free LayerNorm per head.
        attn.spec.q_norm = "q_layernorm";
        attn.spec.k_norm = "k_layernorm";
        auto per_head = [&](const std::string& module, int64_t heads) {
          std::vector<std::string> weights;
          for (int64_t h = 0; h < heads; ++h)
            weights.push_back(attn.spec.prefix + module + ".norms." + std::to_string(h) + ".weight");
          return weights;
        };
        attn.head_layer_norms = {per_head("q_layernorm", d.heads), {}, per_head("k_layernorm", d.kv_heads), {}};
      }
      const SwigluSpec mlp = hf_gated_mlp(p);
      m.layers.push_back({{norm("input_layernorm"), "self_attn", attn, "attn_residual"},
                          {parallel ? NormSpec{} : norm("post_attention_layernorm"), "mlp", mlp, "mlp_residual"},
                          parallel,
                          ParallelSum::residual_first});
    }
    m.tail = TailSpec{NormSpec{"norm", kHfFinalNorm, "model.norm.bias", eps}, head.tensor};
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(StableLmAdapter)
