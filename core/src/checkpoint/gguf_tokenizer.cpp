// Placeholder: the tokenizer from GGUF metadata is written on another branch
// (issue 25 item 4) and replaces this file when it is merged.
#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

GgufTokenizerFiles gguf_tokenizer_files(const nlohmann::ordered_json& /*metadata*/, const std::string& origin) {
  throw BadInput(origin + ": tokenizer from GGUF metadata is not implemented on this branch");
}

}  // namespace llm2hef::core
