// OLMo 2 (Olmo2ForCausalLM): norms after attention and MLP only.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

void olmo2_config(ConfigBuilder& b) { b.llama_family(); }

}  // namespace

std::vector<Family> rows_olmo2() {
  return {{.arch = {"olmo2", "Olmo2ForCausalLM", "olmo2"},
           .globals = llama_globals(),
           .blocks = {{"attn_q", "model.layers.{N}.self_attn.q_proj"},
                      {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                      {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                      {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                      {"attn_q_norm", "model.layers.{N}.self_attn.q_norm"},
                      {"attn_k_norm", "model.layers.{N}.self_attn.k_norm"},
                      {"post_attention_norm", "model.layers.{N}.post_attention_layernorm"},
                      {"post_ffw_norm", "model.layers.{N}.post_feedforward_layernorm"},
                      {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
                      {"ffn_up", "model.layers.{N}.mlp.up_proj"},
                      {"ffn_down", "model.layers.{N}.mlp.down_proj"}},
           .config = olmo2_config}};
}

}  // namespace llm2hef::core::gguf
