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
    auto qk_norm = [&](const Value& in, const std::string& module, int64_t heads) {
      auto s = g.scope(module);
      const std::string weight = spec.prefix + module + ".weight";
      if (spec.qk_norm_full_width) return rms_norm(g, ckpt, in, weight, spec.norm_eps, spec.norm_weight_offset);
      return head_rms_norm(g, ckpt, in, weight, heads, a.head_dim, spec.norm_eps, spec.norm_weight_offset);
    };
    q = qk_norm(q, spec.q_norm, a.heads);
    k = qk_norm(k, spec.k_norm, a.kv_heads);
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
