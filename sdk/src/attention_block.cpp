#include "llm2hef/sdk/attention_block.hpp"

#include <optional>

#include "llm2hef/sdk/rope.hpp"

namespace llm2hef::sdk {

Value attention_block(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const Value& mask, const PeTables& pe,
                      const AttentionBlockSpec& spec) {
  const AttentionShape& a = spec.shape;
  auto proj = [&](const std::string& name, const Value& in, bool bias, float scale = 1.0f) {
    auto s = g.scope(name);
    const std::string base = spec.prefix + name;
    LinearSpec ls{base + ".weight", bias ? std::optional(base + ".bias") : std::nullopt};
    ls.scale = scale;
    return linear(g, ckpt, in, ls);
  };
  Value q = proj("q_proj", x, spec.qkv_bias);
  Value k = proj("k_proj", x, spec.qkv_bias);
  Value v = proj("v_proj", x, spec.qkv_bias);
  if (!spec.q_norm.empty()) {
    {
      auto s = g.scope(spec.q_norm);
      q = head_rms_norm(g, ckpt, q, spec.prefix + spec.q_norm + ".weight", a.heads, a.head_dim, spec.norm_eps);
    }
    auto s = g.scope(spec.k_norm);
    k = head_rms_norm(g, ckpt, k, spec.prefix + spec.k_norm + ".weight", a.kv_heads, a.head_dim, spec.norm_eps);
  }
  if (spec.rope) {
    {
      auto s = g.scope("q");
      q = apply_rope(g, q, pe.q_cos, pe.q_sin, a.heads, a.head_dim);
    }
    auto s = g.scope("k");  // at KV width, before the GQA expansion
    k = apply_rope(g, k, pe.k_cos, pe.k_sin, a.kv_heads, a.head_dim);
  }
  return proj(spec.out_proj, attention(g, q, k, v, mask, a), spec.out_bias, spec.out_scale);
}

}  // namespace llm2hef::sdk
