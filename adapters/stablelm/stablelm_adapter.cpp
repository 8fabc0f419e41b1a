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
#include <cmath>
#include <string>
#include <tuple>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

struct StableLm : DecoderDims {
  int64_t intermediate = 0;
  float eps = 1e-5f;
  bool qkv_bias = false, qk_layernorm = false, parallel = false;
  PartialRope rope;
  LmHead lm_head;
  std::vector<std::string> rewrites;
  std::string layer(int64_t i) const { return "model.layers." + std::to_string(i) + "."; }
};

StableLm read_stablelm(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  refuse_unapplied_forward_keys(c, {"qk_layernorm", "use_qkv_bias", "use_parallel_residual", "partial_rotary_factor"});
  StableLm m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  if (c.has("head_dim") && m.head_dim * m.heads != m.hidden)
    throw Unsupported(c.where("head_dim") + ": StableLM derives head_dim from hidden_size / num_attention_heads");
  m.intermediate = c.get_size("intermediate_size");
  m.eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
  read_activation(c, "hidden_act", {"silu"}, "SwiGLU with silu only");
  m.qkv_bias = c.find_bool("use_qkv_bias").value_or(false);
  m.qk_layernorm = c.find_bool("qk_layernorm").value_or(false);
  m.parallel = c.find_bool("use_parallel_residual").value_or(false);
  m.rope = read_partial_rope(c, m.head_dim, {.default_factor = 0.25}, m.rewrites);
  if (m.qkv_bias) m.rewrites.push_back("q/k/v biases (use_qkv_bias)");
  if (m.qk_layernorm) m.rewrites.push_back("per-head qk_layernorm through constant segment matrices, before RoPE");
  m.rewrites.push_back(m.parallel ? "parallel residual: (h + attention(input_layernorm(h))) + mlp(input_layernorm(h))"
                                  : "sequential residual (use_parallel_residual false)");

  m.lm_head = read_lm_head(ckpt, "model.embed_tokens.weight", m.vocab, m.hidden, m.rewrites);
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"}) {
      if (m.parallel && std::string(norm) == "post_attention_layernorm") continue;
      ckpt.expect(p + norm + ".weight", {m.hidden});
      ckpt.expect(p + norm + ".bias", {m.hidden});
    }
    for (auto [name, rows] : {std::pair{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}}) {
      ckpt.expect(p + "self_attn." + name + ".weight", {rows, m.hidden});
      if (m.qkv_bias) ckpt.expect(p + "self_attn." + name + ".bias", {rows});
    }
    ckpt.expect(p + "self_attn.o_proj.weight", {m.hidden, q});
    if (m.qk_layernorm) {
      for (int64_t h = 0; h < m.heads; ++h)
        ckpt.expect(p + "self_attn.q_layernorm.norms." + std::to_string(h) + ".weight", {m.head_dim});
      for (int64_t h = 0; h < m.kv_heads; ++h)
        ckpt.expect(p + "self_attn.k_layernorm.norms." + std::to_string(h) + ".weight", {m.head_dim});
    }
    ckpt.expect(p + "mlp.gate_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.up_proj.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.down_proj.weight", {m.hidden, m.intermediate});
  }
  ckpt.expect("model.norm.weight", {m.hidden});
  ckpt.expect("model.norm.bias", {m.hidden});
  return m;
}

class StableLmAdapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    return {"stablelm", "0.1.0", "StableLM 2 (LayerNorm, partial rotary, optional qkv bias, QK LayerNorm, parallel residual)",
            {"StableLmForCausalLM"}, {"stablelm"}, {}};
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const StableLm m = read_stablelm(ckpt);
    return rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                             "model.embed_tokens.weight", opt, m.rope.theta, m.rewrites, m.max_positions);
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const StableLm m = read_stablelm(ckpt);
    const float divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);
    const Value hidden = decoder_layers(g, ckpt, io.runtime.embeds, m.layers, [&](int64_t i) {
      const std::string p = m.layer(i);
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", p + name + ".bias", m.eps}; };
      AttentionBlockSpec attn{.prefix = p + "self_attn.",
                              .out_proj = "o_proj",
                              .qkv_bias = m.qkv_bias,
                              .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, divisor},
                              .norm_eps = m.eps,
                              .rotary_dim = m.rope.rotary_dim};
      if (m.qk_layernorm) {
        attn.q_norm = "q_layernorm";
        attn.k_norm = "k_layernorm";
        // StableLmLayerNormPerHead: one bias-free LayerNorm per head.
        for (auto [fn, name, heads] : {std::tuple{&attn.q_norm_fn, "q_layernorm", m.heads},
                                       {&attn.k_norm_fn, "k_layernorm", m.kv_heads}}) {
          std::vector<std::string> weights;
          for (int64_t h = 0; h < heads; ++h)
            weights.push_back(attn.prefix + name + ".norms." + std::to_string(h) + ".weight");
          *fn = head_layer_norm_fn(ckpt, std::move(weights), {}, heads, m.head_dim, m.eps);
        }
      }
      const SwigluSpec mlp{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight",
                           "gate_proj", "up_proj", "down_proj"};
      return DecoderLayer{{norm("input_layernorm"), "self_attn", attention_mixer(ckpt, io, attn), "attn_residual"},
                          {m.parallel ? NormSpec{} : norm("post_attention_layernorm"), "mlp", swiglu_ffn(ckpt, mlp),
                           "mlp_residual"},
                          m.parallel, ParallelSum::residual_first};
    });
    decoder_tail(g, ckpt, hidden, {"norm", "model.norm.weight", "model.norm.bias", m.eps}, m.lm_head.tensor);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(StableLmAdapter, "stablelm", "0.1.0")
