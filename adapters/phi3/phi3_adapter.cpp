// Phi-3 / Phi-3.5-mini / Phi-4-mini (Phi3ForCausalLM). The Llama-family
// layer (RMSNorm, SwiGLU, GQA) with what differs, all exact:
// - qkv_proj and gate_up_proj are fused in contiguous blocks: split at
//   export by column ranges of the transposed weight;
// - longrope: the short factors folded into theta and the attention factor
//   as a Mul of q and k's rotary dimensions, exact for caches up to
//   original_max_position_embeddings (families/longrope.hpp);
// - partial rotary (Phi-4-mini's 0.75) through zero theta entries;
// - sliding_window: exact when the cache fits in it (every layer then sees
//   the whole cache), refused otherwise.
#include <string>

#include "llm2hef/families/longrope.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/config_number.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"
#include "llm2hef/sdk/rope.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace {

using namespace llm2hef;
using namespace llm2hef::sdk;
using namespace llm2hef::families;

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

class Phi3Adapter final : public DecoderAdapter {
 public:
  static constexpr const char kName[] = "phi3";  // also the entry point's (LLM2HEF_DEFINE_ADAPTER_CLASS)
  static constexpr const char kVersion[] = "0.1.0";
  AdapterInfo info() const override {
    return {kName,
            kVersion,
            "Phi-3 / Phi-3.5-mini / Phi-4-mini (fused qkv and gate_up, longrope, partial rotary)",
            {"Phi3ForCausalLM"},
            {"phi3"},
            {},
            {"partial_rotary_factor", "sliding_window", "use_sliding_window", "layer_types"}};
  }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions& /*options*/) const override {
    const JsonFile& raw = ckpt.config();
    DecoderModel m;
    const DecoderDims d = read_decoder_dims(raw);
    const int64_t intermediate = raw.get_size("intermediate_size");
    m.dims = {d.hidden, d.layers, d.vocab, d.heads, d.kv_heads, d.head_dim, intermediate};
    m.max_positions = d.max_positions;
    const float eps = static_cast<float>(checked_number_or(raw, "rms_norm_eps", 1e-5, kNormEpsilon));
    read_activation(raw, "hidden_act", {"silu"}, "SwiGLU with silu only");

    const JsonFile c = resolve_rope_keys(raw, {.default_factor = 1.0});
    const int64_t rotary_dim = rotary_dims(c, d.head_dim);
    std::vector<float> inv;
    float attention_factor = 1.0f;
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
      LongRope lr = longrope_inv_freq(c, rotary_dim, original);
      m.largest_exact_cache = lr.largest_exact_cache;
      m.largest_exact_cache_reason = std::move(lr.largest_exact_cache_reason);
      inv = std::move(lr.inv_freq);
      attention_factor = lr.attention_factor;
      m.rewrites.push_back(lr.rewrite);
    } else {
      inv = rope_inv_freq_dims(c, rotary_dim, m.rewrites);
      const nlohmann::json& dict = c.raw().contains(rope_dict_key(c)) ? c.raw()[rope_dict_key(c)] : nlohmann::json();
      if (dict.is_object() && (dict.contains("short_factor") || dict.contains("long_factor")))
        m.rewrites.push_back(
            "rope_type default: short_factor and long_factor not read, as transformers' default RoPE "
            "does not read them");
    }
    m.theta = partial_rotary_theta(inv, d.head_dim);
    if (rotary_dim < d.head_dim)
      m.rewrites.push_back("partial rotary: RoPE on the first " + std::to_string(rotary_dim) + " of " +
                           std::to_string(d.head_dim) + " dimensions per head; their theta entries are 0 elsewhere");
    m.rewrites.push_back("qkv_proj and gate_up_proj split at export into q/k/v and gate/up column ranges");
    m.embedding = kHfEmbedTokens;
    const LmHead head = describe_lm_head(m.tensors, ckpt, m.embedding, d.vocab, d.hidden, m.rewrites);

    const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
    for (int64_t i = 0; i < d.layers; ++i) {
      const std::string p = hf_layer_prefix(i);
      auto norm = [&](const std::string& name) { return NormSpec{name, p + name + ".weight", std::nullopt, eps}; };
      // qkv_proj rows: q, then k, then v.
      const std::string qkv = m.tensors.add(p + "self_attn.qkv_proj.weight", {q + 2 * kv, d.hidden});
      AttentionMixer attn{{.prefix = p + "self_attn.",
                           .out_proj = "o_proj",
                           .rotary_dim = rotary_dim,
                           .rope_attention_factor = attention_factor}};
      attn.fused_qkv = [qkv, q, kv](GraphBuilder& g, const Checkpoint& ckpt, const Value& x, int part) {
        const int64_t begin = part == 0 ? 0 : q + (part - 1) * kv, end = part == 0 ? q : begin + kv;
        return linear(g, ckpt, x, {qkv, std::nullopt, WeightLayout::out_in, begin, end});
      };
      // gate_up_proj rows: gate first, then up (HF's chunk(2)).
      const std::string gate_up = p + "mlp.gate_up_proj.weight";
      SwigluSpec mlp{gate_up, gate_up, p + "mlp.down_proj.weight", "gate_proj", "up_proj", "down_proj"};
      mlp.gate_end = mlp.up_begin = intermediate;
      mlp.up_end = 2 * intermediate;
      m.layers.push_back({{norm("input_layernorm"), "self_attn", attn, "attn_residual"},
                          {norm("post_attention_layernorm"), "mlp", mlp, "mlp_residual"}});
    }
    m.tail = TailSpec{NormSpec{"norm", kHfFinalNorm, std::nullopt, eps}, head.tensor};
    m.sliding_window = read_sliding_window(raw, d.layers);
    return m;
  }
};

}  // namespace

LLM2HEF_DEFINE_ADAPTER_CLASS(Phi3Adapter)
