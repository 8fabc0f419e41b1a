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

struct Phi : DecoderDims {
  int64_t intermediate = 0;
  float eps = 1e-5f;
  bool qk_layernorm = false;
  PartialRope rope;
  LmHead lm_head;
  std::vector<std::string> rewrites;
  std::string layer(int64_t i) const { return "model.layers." + std::to_string(i) + "."; }
};

Phi read_phi(const Checkpoint& ckpt) {
  const JsonFile& c = ckpt.config();
  refuse_unapplied_forward_keys(c, {"qk_layernorm", "partial_rotary_factor"});
  Phi m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(c);
  m.intermediate = c.get_size("intermediate_size");
  m.eps = static_cast<float>(checked_number_or(c, "layer_norm_eps", 1e-5, kNormEpsilon));
  read_activation(c, "hidden_act", {"gelu_new", "gelu_pytorch_tanh"}, "gelu_new, gelu_pytorch_tanh");
  m.qk_layernorm = c.find_bool("qk_layernorm").value_or(false);
  m.rope = read_partial_rope(c, m.head_dim, {.default_factor = 0.5}, m.rewrites);
  m.rewrites.push_back("parallel residual: h + (attention(input_layernorm(h)) + mlp(input_layernorm(h)))");
  if (m.qk_layernorm) m.rewrites.push_back("qk_layernorm (shared over heads) through constant segment matrices, before RoPE");

  ckpt.expect("model.embed_tokens.weight", {m.vocab, m.hidden});
  m.lm_head = choose_lm_head(ckpt, "model.embed_tokens.weight", m.vocab, m.hidden);
  ckpt.expect("lm_head.bias", {m.vocab});
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    ckpt.expect(p + "input_layernorm.weight", {m.hidden});
    ckpt.expect(p + "input_layernorm.bias", {m.hidden});
    for (auto [name, rows] : {std::pair{"q_proj", q}, {"k_proj", kv}, {"v_proj", kv}}) {
      ckpt.expect(p + "self_attn." + name + ".weight", {rows, m.hidden});
      ckpt.expect(p + "self_attn." + name + ".bias", {rows});
    }
    ckpt.expect(p + "self_attn.dense.weight", {m.hidden, q});
    ckpt.expect(p + "self_attn.dense.bias", {m.hidden});
    if (m.qk_layernorm)
      for (const char* norm : {"q_layernorm", "k_layernorm"}) {
        ckpt.expect(p + "self_attn." + norm + ".weight", {m.head_dim});
        ckpt.expect(p + "self_attn." + norm + ".bias", {m.head_dim});
      }
    ckpt.expect(p + "mlp.fc1.weight", {m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.fc1.bias", {m.intermediate});
    ckpt.expect(p + "mlp.fc2.weight", {m.hidden, m.intermediate});
    ckpt.expect(p + "mlp.fc2.bias", {m.hidden});
  }
  ckpt.expect("model.final_layernorm.weight", {m.hidden});
  ckpt.expect("model.final_layernorm.bias", {m.hidden});
  return m;
}

class PhiAdapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    AdapterInfo i{"phi", "0.1.0", "Phi-2 / Phi-1.5 (parallel attention and MLP, partial rotary, biases)",
                  {"PhiForCausalLM"}, {"phi"}, {}};
    i.options = {{"gelu", {"sigmoid", "tanh"}, "sigmoid",
                  "GELU form: sigmoid = x*sigmoid(1.702x) (parsable approximation), tanh = gelu_new exactly"}};
    return i;
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const Phi m = read_phi(ckpt);
    Plan p = rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                               "model.embed_tokens.weight", opt, m.rope.theta, m.rewrites, m.max_positions);
    const std::string gelu = opt.option(info(), "gelu");
    p.options["gelu"] = gelu;
    p.rewrites.push_back(gelu == "tanh" ? "GELU as gelu_new (tanh form, exact)"
                                        : "GELU as x*sigmoid(1.702x) (approximation; --gelu tanh for exact)");
    p.rewrites.push_back(std::string(m.lm_head.tied ? "tied lm_head written as its own tensor" : "lm_head") +
                         " with its bias after a last-position slice");
    return p;
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const Phi m = read_phi(ckpt);
    const GeluForm gelu = plan.options.value("gelu", "sigmoid") == "tanh" ? GeluForm::tanh : GeluForm::sigmoid;
    const float divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);
    const Value hidden = decoder_layers(g, ckpt, io.runtime.embeds, m.layers, [&](int64_t i) {
      const std::string p = m.layer(i);
      AttentionBlockSpec attn{.prefix = p + "self_attn.",
                              .out_proj = "dense",
                              .qkv_bias = true,
                              .out_bias = true,
                              .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, divisor},
                              .norm_eps = m.eps,
                              .rotary_dim = m.rope.rotary_dim};
      if (m.qk_layernorm) {
        attn.q_norm = "q_layernorm";
        attn.k_norm = "k_layernorm";
        // nn.LayerNorm(head_dim) with bias, shared by every head.
        for (auto [fn, name, heads] : {std::tuple{&attn.q_norm_fn, "q_layernorm", m.heads},
                                       {&attn.k_norm_fn, "k_layernorm", m.kv_heads}}) {
          const std::string mod = attn.prefix + name;
          *fn = head_layer_norm_fn(ckpt, {mod + ".weight"}, {mod + ".bias"}, heads, m.head_dim, m.eps);
        }
      }
      const GeluMlpSpec mlp{{p + "mlp.fc1.weight", p + "mlp.fc1.bias"}, {p + "mlp.fc2.weight", p + "mlp.fc2.bias"},
                            "fc1", "fc2", gelu};
      const NormSpec ln{"input_layernorm", p + "input_layernorm.weight", p + "input_layernorm.bias", m.eps};
      return DecoderLayer{{ln, "self_attn", attention_mixer(ckpt, io, attn), "attn_residual"},
                          {NormSpec{}, "mlp", gelu_ffn(ckpt, mlp), "mlp_residual"},
                          true, ParallelSum::branches_first};
    });
    decoder_tail(g, ckpt, hidden,
                 TailSpec{.final_norm = NormSpec{"final_layernorm", "model.final_layernorm.weight",
                                                 "model.final_layernorm.bias", m.eps},
                          .lm_head = m.lm_head.tensor,
                          .lm_head_bias = "lm_head.bias"});
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(PhiAdapter, "phi", "0.1.0")
