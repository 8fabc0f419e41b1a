// Per-architecture name tables: GGUF stem -> HF module, as facts from
// llama.cpp gguf-py tensor_mapping.py (TensorNameMap.mappings_cfg and
// block_mappings_cfg, the HF spellings of each family) and constants.py
// (MODEL_TENSORS: which tensors each architecture has). What the converter
// did to the data is in conversion/<family>.py modify_tensors; see
// gguf_names.hpp and docs/gguf.md.
#include "llm2hef/core/checkpoint/gguf_names.hpp"

#include <charconv>
#include <map>

namespace llm2hef::core {

namespace {

using T = GgufTransform;

struct Rule {
  const char* stem;    // "attn_q" (blk.N.attn_q) or "token_embd"
  const char* hf;      // HF module, "{N}" for the block index
  T weight = T::none;  // applied to <stem>.weight
  T bias = T::none;    // applied to <stem>.bias
};

struct Table {
  GgufArch arch;
  std::vector<Rule> globals, blocks;
};

// The Llama family's spelling (LlamaForCausalLM and the families that copy
// its module names).
std::vector<Rule> llama_globals() {
  return {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
}
std::vector<Rule> llama_blocks(T qk) {
  return {{"attn_norm", "model.layers.{N}.input_layernorm"},
          {"attn_q", "model.layers.{N}.self_attn.q_proj", qk, qk},
          {"attn_k", "model.layers.{N}.self_attn.k_proj", qk, qk},
          {"attn_v", "model.layers.{N}.self_attn.v_proj"},
          {"attn_output", "model.layers.{N}.self_attn.o_proj"},
          {"attn_q_norm", "model.layers.{N}.self_attn.q_norm"},
          {"attn_k_norm", "model.layers.{N}.self_attn.k_norm"},
          {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
          {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
          {"ffn_up", "model.layers.{N}.mlp.up_proj"},
          {"ffn_down", "model.layers.{N}.mlp.down_proj"}};
}

// Gemma 2 / 3: sandwich norms, every norm stored as 1 + w (Gemma2Model /
// Gemma3Model.modify_tensors: `data_torch + 1` for names ending in
// norm.weight).
std::vector<Rule> gemma_blocks() {
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

const std::vector<Table>& tables() {
  static const std::vector<Table> t = [] {
    std::vector<Table> v;
    // LlamaModel.undo_permute: llama (also Mistral, which llama.cpp writes
    // as llama), and its subclasses GraniteModel and SmolLM3Model.
    for (const auto& [gguf, hf, type] :
         {std::tuple{"llama", "LlamaForCausalLM", "llama"}, std::tuple{"granite", "GraniteForCausalLM", "granite"},
          std::tuple{"smollm3", "SmolLM3ForCausalLM", "smollm3"}})
      v.push_back({{gguf, hf, type}, llama_globals(), llama_blocks(T::rope_unpermute)});
    v.push_back({{"qwen2", "Qwen2ForCausalLM", "qwen2"}, llama_globals(), llama_blocks(T::none)});
    v.push_back({{"qwen3", "Qwen3ForCausalLM", "qwen3"}, llama_globals(), llama_blocks(T::none)});
    const std::vector<Rule> gemma_globals = {{"token_embd", "model.embed_tokens"},
                                             {"output_norm", "model.norm", T::minus_one},
                                             {"output", "lm_head"}};
    v.push_back({{"gemma2", "Gemma2ForCausalLM", "gemma2"}, gemma_globals, gemma_blocks()});
    v.push_back({{"gemma3", "Gemma3ForCausalLM", "gemma3_text"}, gemma_globals, gemma_blocks()});
    // OLMo 2: norms after attention and MLP only.
    v.push_back({{"olmo2", "Olmo2ForCausalLM", "olmo2"},
                 llama_globals(),
                 {{"attn_q", "model.layers.{N}.self_attn.q_proj"},
                  {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                  {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                  {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                  {"attn_q_norm", "model.layers.{N}.self_attn.q_norm"},
                  {"attn_k_norm", "model.layers.{N}.self_attn.k_norm"},
                  {"post_attention_norm", "model.layers.{N}.post_attention_layernorm"},
                  {"post_ffw_norm", "model.layers.{N}.post_feedforward_layernorm"},
                  {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
                  {"ffn_up", "model.layers.{N}.mlp.up_proj"},
                  {"ffn_down", "model.layers.{N}.mlp.down_proj"}}});
    // Phi-3: fused qkv_proj and gate_up_proj kept fused (HF's own layout).
    v.push_back({{"phi3", "Phi3ForCausalLM", "phi3"},
                 llama_globals(),
                 {{"attn_norm", "model.layers.{N}.input_layernorm"},
                  {"attn_qkv", "model.layers.{N}.self_attn.qkv_proj"},
                  {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                  {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
                  {"ffn_up", "model.layers.{N}.mlp.gate_up_proj"},
                  {"ffn_down", "model.layers.{N}.mlp.down_proj"}}});
    // Phi-2 (PhiForCausalLM as transformers names it; Phi2Model has no
    // modify_tensors, so the data is as HF stores it): one LayerNorm per
    // block, dense / fc1 / fc2, biases everywhere, lm_head with a bias.
    // MODEL_TENSORS[PHI2] also lists attn_qkv: files converted from
    // Microsoft's first phi-2 layout (mixer.Wqkv, before transformers had
    // PhiForCausalLM) hold q, k and v fused, which llama.cpp's phi2 graph
    // reads as rows [q; k; v] (views at 0, n_embd, n_embd + n_embd_gqa).
    v.push_back(
        {{"phi2", "PhiForCausalLM", "phi"},
         {{"token_embd", "model.embed_tokens"}, {"output_norm", "model.final_layernorm"}, {"output", "lm_head"}},
         {{"attn_norm", "model.layers.{N}.input_layernorm"},
          {"attn_q", "model.layers.{N}.self_attn.q_proj"},
          {"attn_k", "model.layers.{N}.self_attn.k_proj"},
          {"attn_v", "model.layers.{N}.self_attn.v_proj"},
          {"attn_qkv", "model.layers.{N}.self_attn.{QKV}_proj", T::split_qkv, T::split_qkv},
          {"attn_output", "model.layers.{N}.self_attn.dense"},
          {"ffn_up", "model.layers.{N}.mlp.fc1"},
          {"ffn_down", "model.layers.{N}.mlp.fc2"}}});
    // StableLM 2: LayerNorms with bias; per-head q/k LayerNorms stacked.
    v.push_back({{"stablelm", "StableLmForCausalLM", "stablelm"},
                 llama_globals(),
                 {{"attn_norm", "model.layers.{N}.input_layernorm"},
                  {"attn_q", "model.layers.{N}.self_attn.q_proj"},
                  {"attn_k", "model.layers.{N}.self_attn.k_proj"},
                  {"attn_v", "model.layers.{N}.self_attn.v_proj"},
                  {"attn_output", "model.layers.{N}.self_attn.o_proj"},
                  {"attn_q_norm", "model.layers.{N}.self_attn.q_layernorm.norms.{H}", T::split_heads},
                  {"attn_k_norm", "model.layers.{N}.self_attn.k_layernorm.norms.{H}", T::split_heads},
                  {"ffn_norm", "model.layers.{N}.post_attention_layernorm"},
                  {"ffn_gate", "model.layers.{N}.mlp.gate_proj"},
                  {"ffn_up", "model.layers.{N}.mlp.up_proj"},
                  {"ffn_down", "model.layers.{N}.mlp.down_proj"}}});
    v.push_back(
        {{"gptneox", "GPTNeoXForCausalLM", "gpt_neox"},
         {{"token_embd", "gpt_neox.embed_in"}, {"output_norm", "gpt_neox.final_layer_norm"}, {"output", "embed_out"}},
         {{"attn_norm", "gpt_neox.layers.{N}.input_layernorm"},
          {"attn_qkv", "gpt_neox.layers.{N}.attention.query_key_value", T::neox_qkv, T::neox_qkv},
          {"attn_output", "gpt_neox.layers.{N}.attention.dense"},
          {"ffn_norm", "gpt_neox.layers.{N}.post_attention_layernorm"},
          {"ffn_up", "gpt_neox.layers.{N}.mlp.dense_h_to_4h"},
          {"ffn_down", "gpt_neox.layers.{N}.mlp.dense_4h_to_h"}}});
    v.push_back({{"gpt2", "GPT2LMHeadModel", "gpt2"},
                 {{"token_embd", "transformer.wte"},
                  {"position_embd", "transformer.wpe"},
                  {"output_norm", "transformer.ln_f"},
                  {"output", "lm_head"}},
                 {{"attn_norm", "transformer.h.{N}.ln_1"},
                  {"attn_qkv", "transformer.h.{N}.attn.c_attn", T::transpose},
                  {"attn_output", "transformer.h.{N}.attn.c_proj", T::transpose},
                  {"ffn_norm", "transformer.h.{N}.ln_2"},
                  {"ffn_up", "transformer.h.{N}.mlp.c_fc", T::transpose},
                  {"ffn_down", "transformer.h.{N}.mlp.c_proj", T::transpose}}});
    // LFM2: the final norm is HF's embedding_norm (tensor_mapping.py maps it
    // to token_embd_norm).
    v.push_back(
        {{"lfm2", "Lfm2ForCausalLM", "lfm2"},
         {{"token_embd", "model.embed_tokens"}, {"token_embd_norm", "model.embedding_norm"}, {"output", "lm_head"}},
         {{"attn_norm", "model.layers.{N}.operator_norm"},
          {"attn_q", "model.layers.{N}.self_attn.q_proj"},
          {"attn_k", "model.layers.{N}.self_attn.k_proj"},
          {"attn_v", "model.layers.{N}.self_attn.v_proj"},
          {"attn_output", "model.layers.{N}.self_attn.out_proj"},
          {"attn_q_norm", "model.layers.{N}.self_attn.q_layernorm"},
          {"attn_k_norm", "model.layers.{N}.self_attn.k_layernorm"},
          {"shortconv.conv", "model.layers.{N}.conv.conv", T::unsqueeze_1},
          {"shortconv.in_proj", "model.layers.{N}.conv.in_proj"},
          {"shortconv.out_proj", "model.layers.{N}.conv.out_proj"},
          {"ffn_norm", "model.layers.{N}.ffn_norm"},
          {"ffn_gate", "model.layers.{N}.feed_forward.w1"},
          {"ffn_up", "model.layers.{N}.feed_forward.w3"},
          {"ffn_down", "model.layers.{N}.feed_forward.w2"}}});
    return v;
  }();
  return t;
}

const Table* find_table(std::string_view arch) {
  for (const auto& t : tables())
    if (t.arch.gguf == arch) return &t;
  return nullptr;
}

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::string gguf_supported_archs() {
  std::string s;
  for (const auto& t : tables()) s += (s.empty() ? "" : ", ") + t.arch.gguf;
  return s;
}

const GgufArch* find_gguf_arch(std::string_view arch) {
  const Table* t = find_table(arch);
  return t ? &t->arch : nullptr;
}

std::optional<GgufNameMatch> map_gguf_tensor(const GgufArch& arch, std::string_view name) {
  const Table* table = find_table(arch.gguf);
  if (!table) return std::nullopt;
  std::string_view stem = name, suffix;
  if (name.ends_with(".weight"))
    stem = name.substr(0, name.size() - 7), suffix = "weight";
  else if (name.ends_with(".bias"))
    stem = name.substr(0, name.size() - 5), suffix = "bias";
  else
    return std::nullopt;

  const auto match = [&](const Rule& r, int64_t block) -> GgufNameMatch {
    GgufNameMatch m;
    m.hf_name = replace_all(r.hf, "{N}", block < 0 ? "" : std::to_string(block)) + "." + std::string(suffix);
    m.transform = suffix == "weight" ? r.weight : r.bias;
    m.is_q = std::string_view(r.stem) == "attn_q";
    m.block = block;
    return m;
  };
  if (stem.starts_with("blk.")) {
    const std::string_view rest = stem.substr(4);
    const size_t dot = rest.find('.');
    if (dot == std::string_view::npos || dot == 0) return std::nullopt;
    unsigned block = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + dot, block);
    if (ec != std::errc() || end != rest.data() + dot || (dot > 1 && rest[0] == '0')) return std::nullopt;
    const std::string_view what = rest.substr(dot + 1);
    for (const auto& r : table->blocks)
      if (what == r.stem) return match(r, static_cast<int64_t>(block));
    return std::nullopt;
  }
  for (const auto& r : table->globals)
    if (stem == r.stem) return match(r, -1);
  return std::nullopt;
}

bool is_gguf_config_tensor(std::string_view name) {
  return name == "rope_freqs.weight" || name == "rope_factors_long.weight" || name == "rope_factors_short.weight";
}

}  // namespace llm2hef::core
