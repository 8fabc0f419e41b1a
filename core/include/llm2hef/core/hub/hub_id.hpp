// How a model on the Hugging Face Hub is named on the command line:
// ORG/NAME, ORG/NAME@REVISION (a branch, tag or commit), and a GGUF file
// inside the repository, ORG/NAME[@REVISION]/PATH.gguf (docs/hub.md).
#pragma once

#include <optional>
#include <string>

namespace llm2hef::core::hub {

struct HubId {
  std::string repo;               // ORG/NAME
  std::string revision = "main";  // a branch, a tag or a 40-digit commit
  std::string file;               // a .gguf inside the repository, or empty
  std::string text;               // as the user wrote it, for messages
};

// The Hub id `text` spells, or nothing when it is not spelled as one (a path
// like ./x, /x, x/ or a single name). The repository's parts follow the
// Hub's own rule: letters, digits, '-', '_' and '.', no "--" or "..", neither
// starting nor ending with '-' or '.', 96 characters at most. A revision
// with a '/' (refs/pr/1) cannot be followed by a file: use --gguf-file.
std::optional<HubId> parse_hub_id(const std::string& text);

// True when `file` may name a file of a repository: a relative path whose
// parts are neither empty, "." nor "..", without a backslash or a control
// character (it becomes a path in the cache).
bool is_safe_repo_path(const std::string& file);

// True when `revision` may be a branch, tag or commit: printable ASCII, no
// space or backslash, no empty, "." or ".." part (it becomes a path under
// refs/ in the cache).
bool is_safe_revision(const std::string& revision);

}  // namespace llm2hef::core::hub
