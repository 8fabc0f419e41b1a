// Phi-2 (PhiForCausalLM as transformers names it; Phi2Model has no
// modify_tensors, so the data is as HF stores it): one LayerNorm per block,
// dense / fc1 / fc2, biases everywhere, lm_head with a bias.
// MODEL_TENSORS[PHI2] also lists attn_qkv: files converted from Microsoft's
// first phi-2 layout (mixer.Wqkv, before transformers had PhiForCausalLM)
// hold q, k and v fused, which llama.cpp's phi2 graph reads as rows
// [q; k; v] (views at 0, n_embd, n_embd + n_embd_gqa).
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

// Phi-2: Phi2Model.set_gguf_parameters writes feed_forward_length as
// 4 * n_embd whatever the model's intermediate_size, head_count_kv as
// head_count, no rope.freq_base (llama.cpp's default 10000, transformers'
// too) and n_rot = int(partial_rotary_factor * n_embd) / n_head. The width
// is taken from the fc1 weight, which the graph uses.
void phi2_config(ConfigBuilder& b) {
  Json& c = b.c;
  c["hidden_act"] = "gelu_new";
  const int64_t hd = b.head_dim();
  c["partial_rotary_factor"] = static_cast<double>(b.rotary) / static_cast<double>(hd);
  c["qk_layernorm"] = false;
  if (const GgufTensorInfo* up = b.tensors.find("blk.0.ffn_up.weight"); up && up->ne.size() == 2) {
    const auto width = static_cast<int64_t>(up->ne[1]);
    if (c.contains("intermediate_size") && c["intermediate_size"] != width)
      b.note("Phi-2: intermediate_size " + std::to_string(width) + " from blk.0.ffn_up.weight; '" +
             b.key("feed_forward_length") + "' says " + c["intermediate_size"].dump() +
             " (llama.cpp's converter writes 4 x hidden for every Phi-2 model)");
    c["intermediate_size"] = width;
  }
}

}  // namespace

std::vector<Family> rows_phi2() {
  return {{.arch = {"phi2", "PhiForCausalLM", "phi"},
           .globals = {{"token_embd", "model.embed_tokens"},
                       {"output_norm", "model.final_layernorm"},
                       {"output", "lm_head"}},
           .blocks = {{"attn_norm", "model.layers.{N}.input_layernorm"},
                      {"attn_q", "model.layers.{N}.self_attn.q_proj"},
                      {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                      {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                      {"attn_qkv", "model.layers.{N}.self_attn.{QKV}_proj", GgufTransform::split_qkv,
                       GgufTransform::split_qkv},
                      {"attn_output", "model.layers.{N}.self_attn.dense"},
                      {"ffn_up", "model.layers.{N}.mlp.fc1"},
                      {"ffn_down", "model.layers.{N}.mlp.fc2"}},
           .config = phi2_config,
           .rope = Rope::partial}};
}

}  // namespace llm2hef::core::gguf
