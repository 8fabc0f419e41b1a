#include "llm2hef/sdk/attention_block.hpp"

#include <optional>

#include "llm2hef/sdk/head_norm.hpp"
#include "llm2hef/sdk/rope.hpp"

namespace llm2hef::sdk {

Value attention_block(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const Value& mask, const PeTables& pe,
                      const AttentionBlockSpec& spec) {
  auto proj = [&](const std::string& name, const Value& in, bool bias) {
    auto s = g.scope(name);
    const std::string base = spec.prefix + name;
    return linear(g, ckpt, in, {base + ".weight", bias ? std::optional(base + ".bias") : std::nullopt});
  };
  Value q = proj("q_proj", x, spec.qkv_bias);
  Value k = proj("k_proj", x, spec.qkv_bias);
  Value v = proj("v_proj", x, spec.qkv_bias);
  return attention_from_qkv(g, ckpt, q, k, v, mask, pe, spec);
}

Value attention_from_qkv(GraphBuilder& g, const Checkpoint& ckpt, Value q, Value k, const Value& v, const Value& mask,
                         const PeTables& pe, const AttentionBlockSpec& spec) {
  const AttentionShape& a = spec.shape;
  if (!spec.q_norm.empty()) {
    auto qk_norm = [&](const Value& in, const std::string& module, int64_t heads,
                       const std::function<Value(GraphBuilder&, const Value&)>& custom) {
      auto s = g.scope(module);
      if (custom) return custom(g, in);
      const std::string weight = spec.prefix + module + ".weight";
      if (spec.qk_norm_full_width) return rms_norm(g, ckpt, in, weight, spec.norm_eps, spec.norm_weight_offset);
      return head_rms_norm(g, ckpt, in, weight, heads, a.head_dim, spec.norm_eps, spec.norm_weight_offset);
    };
    q = qk_norm(q, spec.q_norm, a.heads, spec.q_norm_fn);
    k = qk_norm(k, spec.k_norm, a.kv_heads, spec.k_norm_fn);
  }
  if (spec.rope) {
    {
      auto s = g.scope("q");
      if (spec.before_rope) q = spec.before_rope(g, q, a.heads, a.head_dim);
      q = apply_rope(g, q, pe.q_cos, pe.q_sin, a.heads, a.head_dim, spec.rotary_dim);
    }
    auto s = g.scope("k");  // at KV width, before the GQA expansion
    if (spec.before_rope) k = spec.before_rope(g, k, a.kv_heads, a.head_dim);
    k = apply_rope(g, k, pe.k_cos, pe.k_sin, a.kv_heads, a.head_dim, spec.rotary_dim);
  }
  const Value ctx = attention(g, q, k, v, mask, a);
  auto s = g.scope(spec.out_proj);
  const std::string base = spec.prefix + spec.out_proj;
  LinearSpec out{base + ".weight", spec.out_bias ? std::optional(base + ".bias") : std::nullopt};
  out.scale = spec.out_scale;
  return linear(g, ckpt, ctx, out);
}

}  // namespace llm2hef::sdk
