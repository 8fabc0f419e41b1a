// Phi-3 / Phi-3.5-mini / Phi-4-mini (Phi3ForCausalLM). The Llama-family
// layer (RMSNorm, SwiGLU, GQA) with what differs, all exact:
// - qkv_proj and gate_up_proj are fused in contiguous blocks: split at
//   export by column ranges of the transposed weight;
// - longrope: the short factors folded into theta and the attention factor
//   as a Mul of q and k's rotary dimensions, exact for caches up to
//   original_max_position_embeddings (sdk/longrope.hpp);
// - partial rotary (Phi-4-mini's 0.75) through zero theta entries;
// - sliding_window: exact when the cache fits in it (every layer then sees
//   the whole cache), refused otherwise.
#include <cmath>
#include <string>

#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/longrope.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;

struct Phi3 : DecoderDims {
  int64_t intermediate = 0;
  float eps = 1e-5f;
  int64_t rotary_dim = 0;
  std::vector<float> theta;
  float attention_factor = 1.0f;
  LmHead lm_head;
  std::vector<std::string> rewrites;
  std::string layer(int64_t i) const { return "model.layers." + std::to_string(i) + "."; }
};

// rope_type as Phi3Config settles it: "su" and "yarn" are old names of longrope.
std::string rope_type(const JsonFile& c) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    if (!c.raw().contains(key) || !c.raw()[key].is_object()) continue;
    const auto& p = c.raw()[key];
    for (const char* k : {"rope_type", "type"})
      if (p.contains(k) && p[k].is_string()) {
        const std::string t = p[k].get<std::string>();
        return t == "su" || t == "yarn" ? "longrope" : t;
      }
  }
  return "default";
}

// The rope dict's key as the file spells it, for messages.
const char* rope_dict_key(const JsonFile& c) {
  return c.raw().contains("rope_scaling") && c.raw()["rope_scaling"].is_object() ? "rope_scaling" : "rope_parameters";
}

Phi3 read_phi3(const Checkpoint& ckpt, int64_t cache_size) {
  const JsonFile& raw = ckpt.config();
  refuse_unapplied_forward_keys(raw, {"partial_rotary_factor", "sliding_window", "use_sliding_window", "layer_types"});
  Phi3 m;
  static_cast<DecoderDims&>(m) = read_decoder_dims(raw);
  m.intermediate = raw.get_size("intermediate_size");
  m.eps = static_cast<float>(checked_number_or(raw, "rms_norm_eps", 1e-5, kNormEpsilon));
  read_activation(raw, "hidden_act", {"silu"}, "SwiGLU with silu only");

  const JsonFile c = resolve_rope_keys(raw, {.default_factor = 1.0});
  m.rotary_dim = rotary_dims(c, m.head_dim);
  std::vector<float> inv;
  const std::string type = rope_type(c);
  // Phi3Config.validate_rope accepts only these two (after renaming "su" and
  // "yarn"): any other type is refused there, so it is here too rather than
  // read as another RoPE with the long/short factors dropped.
  if (type != "longrope" && type != "default")
    throw BadInput(c.where(rope_dict_key(c)) + ": rope_type '" + type +
                   "' is not one Phi-3 reads (transformers' Phi3Config accepts default and longrope, and su or "
                   "yarn as old names of longrope)");
  if (type == "longrope") {
    // Phi3Config always has original_max_position_embeddings (default 4096),
    // and it overrides the one in the rope dict.
    const int64_t original = raw.find_int("original_max_position_embeddings").value_or(4096);
    LongRope lr = longrope_inv_freq(c, m.rotary_dim, original, cache_size);
    inv = std::move(lr.inv_freq);
    m.attention_factor = lr.attention_factor;
    m.rewrites.push_back(lr.rewrite);
  } else {
    inv = rope_inv_freq_dims(c, m.rotary_dim, m.rewrites);
    const nlohmann::json& dict = c.raw().contains(rope_dict_key(c)) ? c.raw()[rope_dict_key(c)] : nlohmann::json();
    if (dict.is_object() && (dict.contains("short_factor") || dict.contains("long_factor")))
      m.rewrites.push_back("rope_type default: short_factor and long_factor not read, as transformers' default RoPE "
                           "does not read them");
  }
  m.theta = partial_rotary_theta(inv, m.head_dim);
  if (m.rotary_dim < m.head_dim)
    m.rewrites.push_back("partial rotary: RoPE on the first " + std::to_string(m.rotary_dim) + " of " +
                         std::to_string(m.head_dim) + " dimensions per head; their theta entries are 0 elsewhere");
  m.rewrites.push_back("qkv_proj and gate_up_proj split at export into q/k/v and gate/up column ranges");

  m.lm_head = read_lm_head(ckpt, "model.embed_tokens.weight", m.vocab, m.hidden, m.rewrites);
  const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = m.layer(i);
    ckpt.expect(p + "input_layernorm.weight", {m.hidden});
    ckpt.expect(p + "post_attention_layernorm.weight", {m.hidden});
    ckpt.expect(p + "self_attn.qkv_proj.weight", {q + 2 * kv, m.hidden});
    ckpt.expect(p + "self_attn.o_proj.weight", {m.hidden, q});
    ckpt.expect(p + "mlp.gate_up_proj.weight", {2 * m.intermediate, m.hidden});
    ckpt.expect(p + "mlp.down_proj.weight", {m.hidden, m.intermediate});
  }
  ckpt.expect("model.norm.weight", {m.hidden});
  return m;
}

class Phi3Adapter final : public Adapter {
 public:
  AdapterInfo info() const override {
    return {"phi3", "0.1.0", "Phi-3 / Phi-3.5-mini / Phi-4-mini (fused qkv and gate_up, longrope, partial rotary)",
            {"Phi3ForCausalLM"}, {"phi3"}, {}};
  }

  Plan plan(const Checkpoint& ckpt, const ExportOptions& opt) const override {
    const Phi3 m = read_phi3(ckpt, opt.cache_size);
    Plan p = rope_decoder_plan({m.hidden, m.layers, m.vocab, m.heads, m.kv_heads, m.head_dim, m.intermediate},
                               "model.embed_tokens.weight", opt, m.theta, m.rewrites, m.max_positions);
    apply_sliding_window(p, opt, read_sliding_window(ckpt.config(), m.layers));
    return p;
  }

  void build_graph(const Checkpoint& ckpt, const Plan& plan, GraphBuilder& g) const override {
    const Phi3 m = read_phi3(ckpt, plan.cache_size);
    const float divisor = static_cast<float>(std::sqrt(static_cast<double>(m.head_dim)));
    const int64_t q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
    auto model = g.scope("model");
    const DecoderInputs io = decoder_inputs(g, plan);
    const Value hidden = decoder_layers(g, ckpt, io.runtime.embeds, m.layers, [&](int64_t i) {
      const std::string p = m.layer(i);
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, m.eps}; };
      const AttentionBlockSpec attn{.prefix = p + "self_attn.",
                                    .out_proj = "o_proj",
                                    .shape = {plan.cache_size, m.heads, m.kv_heads, m.head_dim, divisor},
                                    .rotary_dim = m.rotary_dim,
                                    .rope_attention_factor = m.attention_factor};
      // qkv_proj rows: q, then k, then v.
      const std::string qkv = p + "self_attn.qkv_proj.weight";
      Block mixer = fused_qkv_attention_mixer(ckpt, io, attn, [&ckpt, qkv, q, kv](GraphBuilder& g, const Value& x, int part) {
        const int64_t begin = part == 0 ? 0 : q + (part - 1) * kv, end = part == 0 ? q : begin + kv;
        return linear(g, ckpt, x, {qkv, std::nullopt, WeightLayout::out_in, begin, end});
      });
      // gate_up_proj rows: gate first, then up (HF's chunk(2)).
      SwigluSpec mlp{p + "mlp.gate_up_proj.weight", p + "mlp.gate_up_proj.weight", p + "mlp.down_proj.weight",
                     "gate_proj", "up_proj", "down_proj"};
      mlp.gate_end = mlp.up_begin = m.intermediate;
      mlp.up_end = 2 * m.intermediate;
      return DecoderLayer{{norm("input_layernorm"), "self_attn", mixer, "attn_residual"},
                          {norm("post_attention_layernorm"), "mlp", swiglu_ffn(ckpt, mlp), "mlp_residual"}};
    });
    decoder_tail(g, ckpt, hidden, {"norm", "model.norm.weight", std::nullopt, m.eps}, m.lm_head.tensor);
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER(Phi3Adapter, "phi3", "0.1.0")
