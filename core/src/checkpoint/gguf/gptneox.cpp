// GPT-NeoX / Pythia (GPTNeoXForCausalLM): the fused query_key_value rows,
// regrouped by the converter from per-head [q k v] to [all q; all k; all v],
// are put back; partial rotary.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void gptneox_config(ConfigBuilder& b) {
  Json& c = b.c;
  const GgufMetadata& meta = b.meta;
  const int64_t hd = b.head_dim();
  c["hidden_act"] = "gelu";
  c["rotary_pct"] = static_cast<double>(b.rotary) / static_cast<double>(hd);
  c["rotary_emb_base"] = c["rope_theta"];
  c["use_parallel_residual"] = meta.find_bool(b.key("use_parallel_residual")).value_or(true);
  c["attention_bias"] = true;
}

}  // namespace

std::vector<Family> rows_gptneox() {
  return {{.arch = {"gptneox", "GPTNeoXForCausalLM", "gpt_neox"},
           .globals = {{"token_embd", "gpt_neox.embed_in"},
                       {"output_norm", "gpt_neox.final_layer_norm"},
                       {"output", "embed_out"}},
           .blocks = {{"attn_norm", "gpt_neox.layers.{N}.input_layernorm"},
                      {"attn_qkv", "gpt_neox.layers.{N}.attention.query_key_value", GgufTransform::neox_qkv,
                       GgufTransform::neox_qkv},
                      {"attn_output", "gpt_neox.layers.{N}.attention.dense"},
                      {"ffn_norm", "gpt_neox.layers.{N}.post_attention_layernorm"},
                      {"ffn_up", "gpt_neox.layers.{N}.mlp.dense_h_to_4h"},
                      {"ffn_down", "gpt_neox.layers.{N}.mlp.dense_4h_to_h"}},
           .config = gptneox_config,
           .rope = Rope::partial}};
}

}  // namespace llm2hef::core::gguf
