// The tokenizer.json the HEF carries, fixed for how the genai runtime uses it,
// and the chat template it renders (hailo-contract.md section 6).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/checkpoint/chat_template.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core {

struct TokenizerFix {
  nlohmann::json tokenizer;          // the fixed tokenizer.json
  std::optional<std::string> bos;    // BOS text the post-processor adds (the runtime ignores post-processors)
  std::vector<std::string> changes;  // what was changed, one line each
};

// Validates `tokenizer` (from `origin`) and removes decoder Strip steps (the
// runtime detokenizes token by token, so a Strip would eat every space).
// Throws BadInput naming the file and field for malformed input or token ids
// >= vocab_size.
TokenizerFix fix_tokenizer(nlohmann::json tokenizer, const std::string& origin, int64_t vocab_size);

// The chat template the runtime renders: the checkpoint's own (found by
// find_chat_template: chat_template.jinja first, then tokenizer_config.json),
// or a plain concatenating template for base models that ship none, made fit
// for hailort by template_for_hailort (chat/hailort_template.hpp: what its
// minja cannot parse refused, load-probe guards made inert, the BOS literal
// once at the start when the template used it or the tokenizer's
// post-processor would have added it, the EOS literal). Every such change, and
// every template found but not used, is appended to `changes`.
std::string chat_template_for_runtime(const sdk::Checkpoint& ckpt, const std::optional<std::string>& bos,
                                      std::vector<std::string>& changes);
// The same on a template already found (`tc`: tokenizer_config.json, for
// its bos_token); no file is read.
std::string chat_template_for_runtime(const ChatTemplate& found, const sdk::JsonFile& tc,
                                      const std::optional<std::string>& bos, std::vector<std::string>& changes);

}  // namespace llm2hef::core
