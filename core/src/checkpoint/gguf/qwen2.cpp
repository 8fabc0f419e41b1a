// Qwen2 / Qwen2.5 (Qwen2ForCausalLM): Llama's module names, rows as stored.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

// Qwen2's config has no attention_bias: Qwen2Attention always has q/k/v
// biases and never an o_proj one.
void qwen2_config(ConfigBuilder& b) { b.llama_family(/*attention_bias=*/false); }

}  // namespace

std::vector<Family> rows_qwen2() {
  return {{.arch = {"qwen2", "Qwen2ForCausalLM", "qwen2"},
           .globals = llama_globals(),
           .blocks = llama_blocks(GgufTransform::none),
           .config = qwen2_config}};
}

}  // namespace llm2hef::core::gguf
