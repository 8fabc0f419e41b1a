// tokenizer.json and tokenizer_config.json for a GGUF checkpoint, from its
// tokenizer.ggml.* and tokenizer.chat_template metadata.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace llm2hef::core {

struct GgufTokenizerFiles {
  nlohmann::json tokenizer_json;
  nlohmann::json tokenizer_config;
};

// Builds tokenizer.json (HF tokenizers format) and tokenizer_config.json (bos_token, eos_token, chat_template, ...)
// from tokenizer.ggml.* / tokenizer.chat_template metadata; throws BadInput naming `origin` and the key when the
// vocabulary cannot be written faithfully.
GgufTokenizerFiles gguf_tokenizer_files(const nlohmann::ordered_json& metadata, const std::string& origin);

}  // namespace llm2hef::core
