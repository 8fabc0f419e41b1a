// GPT-2 (GPT2LMHeadModel): the Conv1D weights, transposed by the converter,
// are put back; learned positions, no RoPE; GPT2Config's own key spellings.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void gpt2_config(ConfigBuilder& b) {
  Json& c = b.c;
  // GPT2Config spellings.
  c["n_embd"] = c["hidden_size"];
  c["n_layer"] = c["num_hidden_layers"];
  c["n_head"] = c["num_attention_heads"];
  if (c.contains("max_position_embeddings")) c["n_positions"] = c["n_ctx"] = c["max_position_embeddings"];
  if (c.contains("layer_norm_eps")) c["layer_norm_epsilon"] = c["layer_norm_eps"];
  if (c.contains("intermediate_size") && c["intermediate_size"] != 4 * c["hidden_size"].get<int64_t>())
    c["n_inner"] = c["intermediate_size"];
  for (const char* k : {"hidden_size", "num_hidden_layers", "num_attention_heads", "max_position_embeddings",
                        "layer_norm_eps", "intermediate_size", "rope_theta", "num_key_value_heads"})
    c.erase(k);
  c["activation_function"] = "gelu_new";
}

}  // namespace

std::vector<Family> rows_gpt2() {
  return {{.arch = {"gpt2", "GPT2LMHeadModel", "gpt2"},
           .globals = {{"token_embd", "transformer.wte"},
                       {"position_embd", "transformer.wpe"},
                       {"output_norm", "transformer.ln_f"},
                       {"output", "lm_head"}},
           .blocks = {{"attn_norm", "transformer.h.{N}.ln_1"},
                      {"attn_qkv", "transformer.h.{N}.attn.c_attn", GgufTransform::transpose},
                      {"attn_output", "transformer.h.{N}.attn.c_proj", GgufTransform::transpose},
                      {"ffn_norm", "transformer.h.{N}.ln_2"},
                      {"ffn_up", "transformer.h.{N}.mlp.c_fc", GgufTransform::transpose},
                      {"ffn_down", "transformer.h.{N}.mlp.c_proj", GgufTransform::transpose}},
           .config = gpt2_config,
           .rope = Rope::none}};
}

}  // namespace llm2hef::core::gguf
