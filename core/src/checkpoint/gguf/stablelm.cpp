// StableLM 2 (StableLmForCausalLM): LayerNorms with bias; the per-head q/k
// LayerNorms stacked into one [heads, dim] tensor, split back; partial rotary.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void stablelm_config(ConfigBuilder& b) {
  Json& c = b.c;
  const GgufMetadata& meta = b.meta;
  const int64_t layers = c["num_hidden_layers"];
  c["hidden_act"] = "silu";
  const int64_t hd = b.head_dim();
  c["partial_rotary_factor"] = static_cast<double>(b.rotary) / static_cast<double>(hd);
  c["use_qkv_bias"] = b.any_block_has("attn_q.bias", layers);
  c["qk_layernorm"] = b.any_block_has("attn_q_norm.weight", layers);
  // llama.cpp's stablelm graph runs attention and MLP in parallel when a
  // block has no ffn_norm (llama-model.cpp, LLM_ARCH_STABLELM).
  c["use_parallel_residual"] =
      meta.find_bool(b.key("use_parallel_residual")).value_or(!b.any_block_has("ffn_norm.weight", layers));
}

}  // namespace

std::vector<Family> rows_stablelm() {
  return {{.arch = {"stablelm", "StableLmForCausalLM", "stablelm"},
           .globals = llama_globals(),
           .blocks = {{"attn_norm", "model.layers.{N}.input_layernorm"},
                      {"attn_q", "model.layers.{N}.self_attn.q_proj"},
                      {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                      {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                      {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                      {"attn_q_norm", "model.layers.{N}.self_attn.q_layernorm.norms.{H}", GgufTransform::split_heads},
                      {"attn_k_norm", "model.layers.{N}.self_attn.k_layernorm.norms.{H}", GgufTransform::split_heads},
                      {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
                      {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
                      {"ffn_up", "model.layers.{N}.mlp.up_proj"},
                      {"ffn_down", "model.layers.{N}.mlp.down_proj"}},
           .config = stablelm_config,
           .rope = Rope::partial}};
}

}  // namespace llm2hef::core::gguf
