// Phi-2 / Phi-1.5 (PhiForCausalLM). What differs from the decoders before
// it, all exact except the default GELU:
// - one LayerNorm feeds attention and MLP in parallel:
//   h + (attn(ln(h)) + mlp(ln(h))), HF's grouping;
// - partial rotary (partial_rotary_factor, default 0.5; Phi-2 0.4) through
//   zero theta entries (sdk/partial_rotary.hpp);
// - biases on q/k/v, dense, fc1, fc2 and the lm_head;
// - qk_layernorm: one LayerNorm over head_dim shared by the heads, per head
//   through segment matrices (sdk/head_norm.hpp);
// - gelu_new as x*sigmoid(1.702x) unless `--gelu tanh` (exact), as GPT-2.
#include <string>

#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

class PhiAdapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "phi";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    AdapterInfo i{kName,
                  kVersion,
                  "Phi-2 / Phi-1.5 (parallel attention and MLP, partial rotary, biases)",
                  {"PhiForCausalLM"},
                  {"phi"},
                  {}};
    i.options = {gelu_new_option()};
    i.applied_keys = {"qk_layernorm", "partial_rotary_factor"};
    return i;
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& options) const override {
    const JsonFile& c = ckpt.config();
    DecoderModel m;
    const DecoderDims d = read_decoder_dims(c);
    m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, c.get_size("intermediate_size")};
    m.max_positions = d.max_positions;
    const float eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
    read_activation(c, "hidden_act", {"gelu_new", "gelu_pytorch_tanh"}, "gelu_new, gelu_pytorch_tanh");
    const bool qk_layernorm = c.find_bool("qk_layernorm").value_or(false);
    const PartialRope rope = read_partial_rope(c, d.head_dim, {.default_factor = 0.5}, m.rewrites);
    m.theta = rope.theta;
    m.rewrites.push_back("parallel residual: h + (attention(input_layernorm(h)) + mlp(input_layernorm(h)))");
    if (qk_layernorm)
      m.rewrites.push_back("qk_layernorm (shared over heads) through constant segment matrices, before RoPE");
    m.embedding = m.tensors.add(kHfEmbedTokens, {d.vocab, d.hidden});
    m.tensors.add_optional("lm_head.weight", {d.vocab, d.hidden});
    const LmHead head = choose_lm_head(ckpt, m.embedding, d.vocab, d.hidden);

    const std::string gelu_option = options.option(info(), "gelu");
    m.options["gelu"] = gelu_option;
    const GeluForm gelu = gelu_new_form(gelu_option);
    for (int64_t i = 0; i < d.layers; ++i) {
      const std::string p = hf_layer_prefix(i);
      AttentionMixer attn{{.prefix = p + "self_attn.",
                           .out_proj = "dense",
                           .qkv_bias = true,
                           .out_bias = true,
                           .norm_eps = eps,
                           .rotary_dim = rope.rotary_dim}};
      if (qk_layernorm) {
        // nn.LayerNorm(head_dim) with bias, shared by every head.
        attn.spec.q_norm = "q_layernorm";
        attn.spec.k_norm = "k_layernorm";
        const std::string q = attn.spec.prefix + "q_layernorm", k = attn.spec.prefix + "k_layernorm";
        attn.head_layer_norms = {{q + ".weight"}, {q + ".bias"}, {k + ".weight"}, {k + ".bias"}};
      }
      const GeluMlpSpec mlp{{p + "mlp.fc1.weight", p + "mlp.fc1.bias"},
                            {p + "mlp.fc2.weight", p + "mlp.fc2.bias"},
                            "fc1",
                            "fc2",
                            gelu};
      const NormSpec ln{"input_layernorm", p + "input_layernorm.weight", p + "input_layernorm.bias", eps};
      m.layers.push_back({{ln, "self_attn", attn, "attn_residual"},
                          {NormSpec{}, "mlp", mlp, "mlp_residual"},
                          true,
                          ParallelSum::branches_first});
    }
    m.tail = TailSpec{.final_norm = NormSpec{"final_layernorm", "model.final_layernorm.weight",
                                             "model.final_layernorm.bias", eps},
                      .lm_head = head.tensor,
                      .lm_head_bias = "lm_head.bias"};
    m.rewrites.push_back(gelu_new_rewrite(gelu));
    m.rewrites.push_back(std::string(head.tied ? "tied lm_head written as its own tensor" : "lm_head") +
                         " with its bias after a last-position slice");
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(PhiAdapter)
