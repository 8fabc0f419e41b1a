// LFM2 (Lfm2ForCausalLM): short-conv and attention layers; the conv weight
// [hidden, 1, L] was squeezed to [hidden, L]; the final norm is HF's
// embedding_norm (tensor_mapping.py maps it to token_embd_norm).
#include "config_builder.hpp"
#include "family.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

// LFM2: head_count_kv is one value per layer, 0 for short-conv layers.
void lfm2_config(ConfigBuilder& b) {
  Json& c = b.c;
  const GgufMetadata& meta = b.meta;
  const int64_t layers = c["num_hidden_layers"];
  const std::string kv_key = b.key("attention.head_count_kv");
  const auto& raw = meta.raw();
  Json types = Json::array();
  int64_t kv_heads = 0;
  if (raw.contains(kv_key) && raw[kv_key].is_array()) {
    if (static_cast<int64_t>(raw[kv_key].size()) != layers)
      throw BadInput(meta.where(kv_key) + " has " + std::to_string(raw[kv_key].size()) + " values for " +
                     std::to_string(layers) + " layers");
    for (const auto& v : raw[kv_key]) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw BadInput(meta.where(kv_key) + " holds " + v.dump() + ", expected non-negative integers");
      const int64_t n = v.get<int64_t>();
      types.push_back(n == 0 ? "conv" : "full_attention");
      if (n != 0 && kv_heads != 0 && n != kv_heads)
        throw Unsupported(meta.where(kv_key) + " has different KV head counts per attention layer");
      if (n != 0) kv_heads = n;
    }
  } else {
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(b.has_tensor("blk." + std::to_string(i) + ".attn_q.weight") ? "full_attention" : "conv");
    kv_heads = c.value("num_key_value_heads", c["num_attention_heads"].get<int64_t>());
  }
  c["layer_types"] = types;
  c["num_key_value_heads"] = kv_heads == 0 ? c["num_attention_heads"].get<int64_t>() : kv_heads;
  if (c.contains("rms_norm_eps")) c["norm_eps"] = c["rms_norm_eps"];
  if (auto l = meta.find_size(b.key("shortconv.l_cache"), 64)) c["conv_L_cache"] = *l;
  c["conv_bias"] = b.any_block_has("shortconv.in_proj.bias", layers);
  // The feed-forward width as stored: llama.cpp writes the adjusted one.
  if (const GgufTensorInfo* gate = b.tensors.find("blk.0.ffn_gate.weight"); gate && gate->ne.size() == 2) {
    c["intermediate_size"] = static_cast<int64_t>(gate->ne[1]);
    c["block_ff_dim"] = static_cast<int64_t>(gate->ne[1]);
  }
  c["block_auto_adjust_ff_dim"] = false;
}

}  // namespace

std::vector<Family> rows_lfm2() {
  return {{.arch = {"lfm2", "Lfm2ForCausalLM", "lfm2"},
           .globals = {{"token_embd", "model.embed_tokens"},
                       {"token_embd_norm", "model.embedding_norm"},
                       {"output", "lm_head"}},
           .blocks = {{"attn_norm", "model.layers.{N}.operator_norm"},
                      {"attn_q", "model.layers.{N}.self_attn.q_proj"},
                      {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                      {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                      {"attn_output", "model.layers.{N}.self_attn.out_proj"},
                      {"attn_q_norm", "model.layers.{N}.self_attn.q_layernorm"},
                      {"attn_k_norm", "model.layers.{N}.self_attn.k_layernorm"},
                      {"shortconv.conv", "model.layers.{N}.conv.conv", GgufTransform::unsqueeze_1},
                      {"shortconv.in_proj", "model.layers.{N}.conv.in_proj"},
                      {"shortconv.out_proj", "model.layers.{N}.conv.out_proj"},
                      {"ffn_norm", "model.layers.{N}.ffn_norm"},
                      {"ffn_gate", "model.layers.{N}.feed_forward.w1"},
                      {"ffn_up", "model.layers.{N}.feed_forward.w3"},
                      {"ffn_down", "model.layers.{N}.feed_forward.w2"}},
           .config = lfm2_config}};
}

}  // namespace llm2hef::core::gguf
