// Phi-3 / Phi-4-mini (Phi3ForCausalLM): fused qkv_proj and gate_up_proj
// kept fused (HF's own layout); LongRoPE factors as tensors; partial rotary.
#include "config_builder.hpp"
#include "family.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void phi3_config(ConfigBuilder& b) {
  Json& c = b.c;
  const GgufMetadata& meta = b.meta;
  c["hidden_act"] = "silu";
  const int64_t hd = b.head_dim();
  if (b.rotary != hd) c["partial_rotary_factor"] = static_cast<double>(b.rotary) / static_cast<double>(hd);
  if (auto w = meta.find_size(b.key("attention.sliding_window"), int64_t{1} << 40))
    c["sliding_window"] = *w == 0 ? Json() : Json(*w);
  if (auto orig = meta.find_size(b.key("rope.scaling.original_context_length"), int64_t{1} << 40))
    c["original_max_position_embeddings"] = *orig;
  // LongRoPE: the factors are tensors (Phi3MiniModel.generate_extra_tensors).
  if (b.has_tensor("rope_factors_long.weight") || b.has_tensor("rope_factors_short.weight")) {
    if (!b.has_tensor("rope_factors_long.weight") || !b.has_tensor("rope_factors_short.weight"))
      throw BadInput(meta.origin() + ": only one of rope_factors_long.weight and rope_factors_short.weight is present");
    Json scaling = {{"rope_type", "longrope"}};
    for (const auto& [t, k] : {std::pair{"rope_factors_long.weight", "long_factor"},
                               std::pair{"rope_factors_short.weight", "short_factor"}}) {
      Json v = Json::array();
      for (float f : b.rope_factors(t)) v.push_back(f32_decimal(f));
      scaling[k] = v;
    }
    if (c.contains("original_max_position_embeddings"))
      scaling["original_max_position_embeddings"] = c["original_max_position_embeddings"];
    c["rope_scaling"] = scaling;
    c.erase("rope_scaling_type");
  }
}

}  // namespace

std::vector<Family> rows_phi3() {
  return {{.arch = {"phi3", "Phi3ForCausalLM", "phi3"},
           .globals = llama_globals(),
           .blocks = {{"attn_norm", "model.layers.{N}.input_layernorm"},
                      {"attn_qkv", "model.layers.{N}.self_attn.qkv_proj"},
                      {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                      {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
                      {"ffn_up", "model.layers.{N}.mlp.gate_up_proj"},
                      {"ffn_down", "model.layers.{N}.mlp.down_proj"}},
           .config = phi3_config,
           .rope = Rope::partial}};
}

}  // namespace llm2hef::core::gguf
