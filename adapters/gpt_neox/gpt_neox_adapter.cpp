// GPT-NeoX / Pythia (GPTNeoXForCausalLM). What differs from the decoders
// before it, all exact:
// - query_key_value is fused per head ([heads, 3, head_dim] rows): split at
//   export into q, k and v weights (sdk/fused_projection.hpp);
// - partial rotary (rotary_pct, default 0.25) through zero theta entries
//   (sdk/partial_rotary.hpp);
// - use_parallel_residual: h + (mlp(ln_2(h)) + attn(ln_1(h))), else the
//   usual sequential pre-norm layer;
// - GELU is hidden_act "gelu", the exact erf form (or gelu_new's tanh form);
// - the head is embed_out, untied by default.
#include <cmath>
#include <string>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/fused_projection.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

struct NeoX : DecoderDims {
  int64_t intermediate = 0;
  float eps = 1e-5f;
  bool parallel = true, bias = true;
  GeluForm gelu = GeluForm::erf;
  PartialRope rope;
  std::string head;  // embed_out.weight, or embed_in.weight when tied
  std::vector<std::string> rewrites;
};

NeoX read_neox(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  refuse_unapplied_forward_keys(c, {"attention_bias", "use_parallel_residual", "partial_rotary_factor", "rotary_pct"});
  NeoX m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  if (c.has("num_key_value_heads") && m.kv_heads != m.heads)
    throw Unsupported(c.where("num_key_value_heads") + ": GPT-NeoX has no grouped-query attention");
  if (c.has("head_dim") && m.head_dim * m.heads != m.hidden)
    throw Unsupported(c.where("head_dim") + ": GPT-NeoX derives head_dim from hidden_size / num_attention_heads");
  m.intermediate = c.get_size("intermediate_size");
  m.eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
  m.parallel = c.find_bool("use_parallel_residual").value_or(true);
  m.bias = c.find_bool("attention_bias").value_or(true);
  const std::string act =
      read_activation(c, "hidden_act", {"gelu", "gelu_new", "gelu_pytorch_tanh"}, "gelu, gelu_new, gelu_pytorch_tanh");
  if (act == "gelu") {
    m.gelu = GeluForm::erf;
    m.rewrites.push_back("GELU exact (erf form: Div, Erf, Add, Mul, Mul)");
  } else {
    m.gelu = GeluForm::tanh;
    m.rewrites.push_back("GELU as " + act + " (tanh form, exact)");
  }
  m.rope = read_partial_rope(c, m.head_dim, {.default_factor = 0.25, .factor_alias = "rotary_pct", .base_alias = "rotary_emb_base"},
                             m.rewrites);
  m.rewrites.push_back("query_key_value ([heads, 3, head_dim] rows) split at export into q, k and v projections");
  m.rewrites.push_back(m.parallel ? "parallel residual: h + (mlp(post_attention_layernorm(h)) + attention(input_layernorm(h)))"
                                  : "sequential residual (use_parallel_residual false)");

  ckpt.expect("gpt_neox.embed_in.weight", {m.vocab, m.hidden});
  const bool tied = c.find_bool("tie_word_embeddings").value_or(false);
  if (ckpt.has("embed_out.weight")) {
    ckpt.expect("embed_out.weight", {m.vocab, m.hidden});
    m.head = "embed_out.weight";
  } else if (tied) {
    m.head = "gpt_neox.embed_in.weight";
  } else {
    throw BadInput(c.where("tie_word_embeddings") + ": false (the default), but the checkpoint has no embed_out.weight");
  }
  m.rewrites.push_back(m.head == "embed_out.weight" ? "embed_out after a last-position slice"
                                                    : "tied embed_in written as the head after a last-position slice");
  const int64_t h = m.hidden;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
    for (const char* norm : {"input_layernorm", "post_attention_layernorm"}) {
      ckpt.expect(p + norm + ".weight", {h});
      ckpt.expect(p + norm + ".bias", {h});
    }
    ckpt.expect(p + "attention.query_key_value.weight", {3 * h, h});
    ckpt.expect(p + "attention.dense.weight", {h, h});
    if (m.bias) {
      ckpt.expect(p + "attention.query_key_value.bias", {3 * h});
      ckpt.expect(p + "attention.dense.bias", {h});
    }
    ckpt.expect(p + "mlp.dense_h_to_4h.weight", {m.intermediate, h});
    ckpt.expect(p + "mlp.dense_h_to_4h.bias", {m.intermediate});
    ckpt.expect(p + "mlp.dense_4h_to_h.weight", {h, m.intermediate});
    ckpt.expect(p + "mlp.dense_4h_to_h.bias", {h});
  }
  ckpt.expect("gpt_neox.final_layer_norm.weight", {h});
  ckpt.expect("gpt_neox.final_layer_norm.bias", {h});
  return m;
}

class GptNeoXAdapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    return {"gpt_neox", "0.1.0", "GPT-NeoX / Pythia (fused per-head qkv, partial rotary, parallel residual)",
            {"GPTNeoXForCausalLM"}, {"gpt_neox"}, {}};
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const NeoX m = read_neox(ckpt);
    return rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                             "gpt_neox.embed_in.weight", opt, m.rope.theta, m.rewrites, m.max_positions);
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const NeoX m = read_neox(ckpt);
    const float divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);
    const Value hidden = decoder_layers(g, ckpt, io.runtime.embeds, m.layers, [&](int64_t i) {
      const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", p + name + ".bias", m.eps}; };
      const AttentionBlockSpec attn{.prefix = p + "attention.",
                                    .out_proj = "dense",
                                    .out_bias = m.bias,
                                    .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, divisor},
                                    .rotary_dim = m.rope.rotary_dim};
      const std::string qkv = p + "attention.query_key_value.";
      Block mixer = fused_qkv_attention_mixer(ckpt, io, attn, [&ckpt, &m, qkv](GraphBuilder& g, const Value& x, int part) {
        return linear_rows(g, ckpt, x, qkv + "weight", m.bias ? std::optional(qkv + "bias") : std::nullopt,
                           interleaved_qkv_rows(m.heads, m.head_dim, part));
      });
      const GeluMlpSpec mlp{{p + "mlp.dense_h_to_4h.weight", p + "mlp.dense_h_to_4h.bias"},
                            {p + "mlp.dense_4h_to_h.weight", p + "mlp.dense_4h_to_h.bias"},
                            "dense_h_to_4h", "dense_4h_to_h", m.gelu};
      return DecoderLayer{{norm("input_layernorm"), "attention", mixer, "attn_residual"},
                          {norm("post_attention_layernorm"), "mlp", gelu_ffn(ckpt, mlp), "mlp_residual"},
                          m.parallel, ParallelSum::branches_first};
    });
    decoder_tail(g, ckpt, hidden,
                 {"final_layer_norm", "gpt_neox.final_layer_norm.weight", "gpt_neox.final_layer_norm.bias", m.eps}, m.head);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(GptNeoXAdapter, "gpt_neox", "0.1.0")
