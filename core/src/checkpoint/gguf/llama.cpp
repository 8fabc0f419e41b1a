// Llama (LlamaForCausalLM), and Mistral, which llama.cpp's converter writes
// as llama too: transformers' GGUF loader tells them apart by general.name,
// and so does this row's variant. q_proj and k_proj rows were permuted for
// ggml's interleaved RoPE (LlamaModel.permute) and are put back.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

void llama_config(ConfigBuilder& b) { b.llama_family(); }

}  // namespace

std::vector<Family> rows_llama() {
  return {{.arch = {"llama", "LlamaForCausalLM", "llama"},
           .globals = llama_globals(),
           .blocks = llama_blocks(GgufTransform::rope_unpermute),
           .config = llama_config,
           .variants = {{"mistral", {"llama", "MistralForCausalLM", "mistral"}}}}};
}

}  // namespace llm2hef::core::gguf
