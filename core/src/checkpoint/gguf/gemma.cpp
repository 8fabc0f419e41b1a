// Gemma 2 and Gemma 3 (text): sandwich norms, every *norm.weight stored as
// 1 + w (Gemma2Model / Gemma3Model.modify_tensors: `data_torch + 1`), and
// the SentencePiece vocabulary the converter changed (Vocabulary::gemma).
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

std::vector<NameRule> gemma_globals() {
  return {{"token_embd", "model.embed_tokens"},
          {"output_norm", "model.norm", GgufTransform::minus_one},
          {"output", "lm_head"}};
}

std::vector<NameRule> gemma_blocks() {
  using T = GgufTransform;
  return {{"attn_norm", "model.layers.{N}.input_layernorm", T::minus_one},
          {"attn_q", "model.layers.{N}.self_attn.q_proj"},
          {"attn_k", "model.layers.{N}.self_attn.k_proj"},
          {"attn_v", "model.layers.{N}.self_attn.v_proj"},
          {"attn_output", "model.layers.{N}.self_attn.o_proj"},
          {"attn_q_norm", "model.layers.{N}.self_attn.q_norm", T::minus_one},
          {"attn_k_norm", "model.layers.{N}.self_attn.k_norm", T::minus_one},
          {"post_attention_norm", "model.layers.{N}.post_attention_layernorm", T::minus_one},
          {"ffn_norm", "model.layers.{N}.pre_feedforward_layernorm", T::minus_one},
          {"post_ffw_norm", "model.layers.{N}.post_feedforward_layernorm", T::minus_one},
          {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
          {"ffn_up", "model.layers.{N}.mlp.up_proj"},
          {"ffn_down", "model.layers.{N}.mlp.down_proj"}};
}

// Gemma 2 / 3: query_pre_attn_scalar is not stored; llama.cpp uses
// head_dim, except for the 27B models (46 / 62 layers) where it uses
// hidden / heads (llama-model.cpp, LLM_ARCH_GEMMA2 / GEMMA3).
void gemma_config(ConfigBuilder& b, bool gemma3) {
  Json& c = b.c;
  const GgufMetadata& meta = b.meta;
  const int64_t layers = c["num_hidden_layers"];
  c["hidden_activation"] = "gelu_pytorch_tanh";
  const bool big = layers == (gemma3 ? 62 : 46);
  const int64_t scalar = big ? c["hidden_size"].get<int64_t>() / c["num_attention_heads"].get<int64_t>() : b.head_dim();
  c["query_pre_attn_scalar"] = scalar;
  b.note("Gemma: query_pre_attn_scalar is not stored in GGUF; " + std::to_string(scalar) +
         " assumed as llama.cpp does (head_dim, or hidden/heads for the 27B model)");
  if (auto v = b.number("attn_logit_softcapping")) c["attn_logit_softcapping"] = *v;
  if (auto v = b.number("final_logit_softcapping")) c["final_logit_softcapping"] = *v;
  if (auto w = meta.find_size(b.key("attention.sliding_window"), int64_t{1} << 40)) c["sliding_window"] = *w;
  Json types = Json::array();
  if (!gemma3) {
    for (int64_t i = 0; i < layers; ++i) types.push_back(i % 2 == 0 ? "sliding_attention" : "full_attention");
  } else {
    // Gemma 3: five sliding layers then one global (llama.cpp:
    // set_swa_pattern(6)); the local RoPE base 10000 (freq_base_swa when written).
    const int64_t pattern = meta.find_size(b.key("attention.sliding_window_pattern")).value_or(6);
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(pattern > 0 && (i + 1) % pattern == 0 ? "full_attention" : "sliding_attention");
    c["rope_local_base_freq"] = b.number("rope.freq_base_swa").value_or(10000.0);
    if (!meta.has(b.key("attention.sliding_window_pattern")))
      b.note(
          "Gemma 3: the sliding-window pattern is not stored in GGUF; llama.cpp's (5 sliding layers, then 1 global) "
          "is assumed");
  }
  c["layer_types"] = types;
}

void gemma2_config(ConfigBuilder& b) { gemma_config(b, false); }
void gemma3_config(ConfigBuilder& b) { gemma_config(b, true); }

}  // namespace

std::vector<Family> rows_gemma() {
  return {{.arch = {"gemma2", "Gemma2ForCausalLM", "gemma2"},
           .globals = gemma_globals(),
           .blocks = gemma_blocks(),
           .config = gemma2_config,
           .vocabulary = Vocabulary::gemma},
          {.arch = {"gemma3", "Gemma3ForCausalLM", "gemma3_text"},
           .globals = gemma_globals(),
           .blocks = gemma_blocks(),
           .config = gemma3_config,
           .vocabulary = Vocabulary::gemma}};
}

}  // namespace llm2hef::core::gguf
