// The chat template a checkpoint ships, found the way transformers finds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// The largest chat template read, wherever it comes from (a .jinja file,
// tokenizer_config.json's chat_template, a GGUF's tokenizer.chat_template):
// real ones are a few KB, the largest known (with tool calling) about 20 KB.
// Every pass over a template is linear in its length (docs/reliability.md).
inline constexpr uint64_t kMaxChatTemplateBytes = uint64_t{4} << 20;

// The chat template of a checkpoint folder, found as transformers finds it
// (5.x; late 4.x releases already save it this way): chat_template.jinja ("default") and
// additional_chat_templates/<name>.jinja take priority over
// tokenizer_config.json's `chat_template`, which is one template or a list of
// {"name", "template"}. Of several named templates, "default" is taken (what
// apply_chat_template renders without tools).
struct ChatTemplate {
  std::optional<std::string> text;  // nullopt: the checkpoint has no chat template
  std::string source;               // short, for reports: "chat_template.jinja", ...
  std::string origin;               // file (and field) for messages
  std::vector<std::string> notes;   // templates found but not used, one line each
};

// Throws BadInput naming the file (and field) for an unreadable, empty or
// non-UTF-8 template file, a malformed `chat_template`, or named templates
// without a "default" (transformers refuses to choose one as well).
ChatTemplate find_chat_template(const sdk::Checkpoint& ckpt);

// The template the user gave with --chat-template FILE, in place of the
// checkpoint's (a note says so); the checkpoint's otherwise.
ChatTemplate chosen_chat_template(const sdk::Checkpoint& ckpt, const std::optional<std::filesystem::path>& file);

// The text of a .jinja template file as find_chat_template takes it: throws
// BadInput naming `origin` when it is empty, larger than
// kMaxChatTemplateBytes or not UTF-8.
std::string checked_template_text(std::string text, const std::string& origin);

}  // namespace llm2hef::core
