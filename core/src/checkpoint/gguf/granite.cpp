// Granite (GraniteForCausalLM): Llama's modules (GraniteModel subclasses
// LlamaModel, so q/k rows are permuted) and four scaling multipliers.
#include "config_builder.hpp"
#include "family.hpp"

namespace llm2hef::core::gguf {

namespace {

using Json = nlohmann::json;

void granite_config(ConfigBuilder& b) {
  Json& c = b.c;
  b.llama_family();
  for (const auto& [k, hf] :
       {std::pair{"attention.scale", "attention_multiplier"}, std::pair{"embedding_scale", "embedding_multiplier"},
        std::pair{"residual_scale", "residual_multiplier"}, std::pair{"logit_scale", "logits_scaling"}})
    if (auto v = b.number(k)) c[hf] = *v;
}

}  // namespace

std::vector<Family> rows_granite() {
  return {{.arch = {"granite", "GraniteForCausalLM", "granite"},
           .globals = llama_globals(),
           .blocks = llama_blocks(GgufTransform::rope_unpermute),
           .config = granite_config}};
}

}  // namespace llm2hef::core::gguf
