// Qwen3 (Qwen3ForCausalLM): Llama's module names with q/k norms, rows as stored.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

void qwen3_config(ConfigBuilder& b) { b.llama_family(); }

}  // namespace

std::vector<Family> rows_qwen3() {
  return {{.arch = {"qwen3", "Qwen3ForCausalLM", "qwen3"},
           .globals = llama_globals(),
           .blocks = llama_blocks(GgufTransform::none),
           .config = qwen3_config}};
}

}  // namespace llm2hef::core::gguf
