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
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/fused_projection.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

class GptNeoXAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "gpt_neox";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "GPT-NeoX / Pythia (fused per-head qkv, partial rotary, parallel residual)",
            {"GPTNeoXForCausalLM"},
            {"gpt_neox"},
            {},
            {"attention_bias", "use_parallel_residual", "partial_rotary_factor", "rotary_pct"}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const DecoderDims d = read_decoder_dims(c);
    if (c.has("num_key_value_heads") && d.kv_heads != d.heads)
      throw Unsupported(c.where("num_key_value_heads") + ": GPT-NeoX has no grouped-query attention");
    if (c.has("head_dim") && d.head_dim * d.heads != d.hidden)
      throw Unsupported(c.where("head_dim") + ": GPT-NeoX derives head_dim from hidden_size / num_attention_heads");
    m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, c.get_size("intermediate_size")};
    m.max_positions = d.max_positions;
    const float eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
    const bool parallel = c.find_bool("use_parallel_residual").value_or(true);
    const bool bias = c.find_bool("attention_bias").value_or(true);
    const std::string act = read_activation(c, "hidden_act", {"gelu", "gelu_new", "gelu_pytorch_tanh"},
                                            "gelu, gelu_new, gelu_pytorch_tanh");
    const GeluForm gelu = act == "gelu" ? GeluForm::erf : GeluForm::tanh;
    m.rewrites.push_back(act == "gelu" ? "GELU exact (erf form: Div, Erf, Add, Mul, Mul)"
                                       : "GELU as " + act + " (tanh form, exact)");
    const PartialRope rope =
        read_partial_rope(c, d.head_dim,
                          {.default_factor = 0.25, .factor_alias = "rotary_pct", .base_alias = "rotary_emb_base"},
                          m.rewrites);
    m.theta = rope.theta;
    m.rewrites.push_back("query_key_value ([heads, 3, head_dim] rows) split at export into q, k and v projections");
    m.rewrites.push_back(
        parallel ? "parallel residual: h + (mlp(post_attention_layernorm(h)) + attention(input_layernorm(h)))"
                 : "sequential residual (use_parallel_residual false)");

    // The head: embed_out, or the embedding when tied (GPTNeoXConfig's default is untied).
    m.embedding = m.tensors.add("gpt_neox.embed_in.weight", {d.vocab, d.hidden});
    const bool tied = c.find_bool("tie_word_embeddings").value_or(false);
    std::string head = "embed_out.weight";
    if (ckpt.has(head)) {
      m.tensors.add(head, {d.vocab, d.hidden});
      m.rewrites.push_back("embed_out after a last-position slice");
    } else if (tied) {
      head = m.embedding;
      m.rewrites.push_back("tied embed_in written as the head after a last-position slice");
    } else {
      throw BadInput(c.where("tie_word_embeddings") +
                     ": false (the default), but the checkpoint has no embed_out.weight");
    }

    for (int64_t i = 0; i < d.layers; ++i) {
      const std::string p = "gpt_neox.layers." + std::to_string(i) + ".";
      auto norm = [&](const std::string& name) {
        return NormSpec{name, p + name + ".weight", p + name + ".bias", eps};
      };
      const std::string qkv = m.tensors.add(p + "attention.query_key_value.weight", {3 * d.hidden, d.hidden});
      const std::optional<std::string> qkv_bias =
          bias ? std::optional(m.tensors.add(p + "attention.query_key_value.bias", {3 * d.hidden})) : std::nullopt;
      AttentionMixer attn{
          {.prefix = p + "attention.", .out_proj = "dense", .out_bias = bias, .rotary_dim = rope.rotary_dim}};
      attn.fused_qkv = [qkv, qkv_bias, heads = d.heads, head_dim = d.head_dim](GraphBuilder& g, const Checkpoint& ckpt,
                                                                               const Value& x, int part) {
        return linear_rows(g, ckpt, x, qkv, qkv_bias, interleaved_qkv_rows(heads, head_dim, part));
      };
      const GeluMlpSpec mlp{{p + "mlp.dense_h_to_4h.weight", p + "mlp.dense_h_to_4h.bias"},
                            {p + "mlp.dense_4h_to_h.weight", p + "mlp.dense_4h_to_h.bias"},
                            "dense_h_to_4h",
                            "dense_4h_to_h",
                            gelu};
      m.layers.push_back({{norm("input_layernorm"), "attention", attn, "attn_residual"},
                          {norm("post_attention_layernorm"), "mlp", mlp, "mlp_residual"},
                          parallel,
                          ParallelSum::branches_first});
    }
    m.tail = TailSpec{NormSpec{"final_layer_norm", "gpt_neox.final_layer_norm.weight", "gpt_neox.final_layer_norm.bias",
                               eps},
                      head};
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(GptNeoXAdapter)
