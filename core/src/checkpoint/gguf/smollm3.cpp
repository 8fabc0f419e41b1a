// SmolLM3 (SmolLM3ForCausalLM): Llama's modules (SmolLM3Model subclasses
// LlamaModel, so q/k rows are permuted) and NoPE layers GGUF does not store.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void smollm3_config(ConfigBuilder& b) {
  Json& c = b.c;
  b.llama_family();
  // SmolLM3's NoPE layers (no_rope_layers) are not in GGUF: llama.cpp
  // hard-codes "every 4th layer has no RoPE" (llama-model.cpp, LLM_ARCH_SMOLLM3).
  const int64_t layers = c["num_hidden_layers"];
  Json no_rope = Json::array();
  for (int64_t i = 0; i < layers; ++i) no_rope.push_back((i + 1) % 4 == 0 ? 0 : 1);
  c["no_rope_layers"] = no_rope;
  b.note("SmolLM3: no_rope_layers is not stored in GGUF; llama.cpp's rule (every 4th layer without RoPE) is assumed");
}

}  // namespace

std::vector<Family> rows_smollm3() {
  return {{.arch = {"smollm3", "SmolLM3ForCausalLM", "smollm3"},
           .globals = llama_globals(),
           .blocks = llama_blocks(GgufTransform::rope_unpermute),
           .config = smollm3_config}};
}

}  // namespace llm2hef::core::gguf
