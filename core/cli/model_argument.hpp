// MODEL as inspect and export take it: a local checkpoint folder or .gguf
// file, else a Hugging Face Hub id (ORG/NAME[@REVISION][/FILE.gguf]) whose
// files are fetched into the Hugging Face cache (core/hub/hub_fetch.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <string>

namespace llm2hef::cli {

struct ModelArgumentOptions {
  std::string gguf_file;  // --gguf-file: a GGUF inside the Hub repository
  bool progress = false;
  bool quiet = false;
  // For a Hub id, called with the repository's cache folder
  // (models--ORG--NAME) before anything is fetched: export refuses a bad -o
  // there rather than after a long download.
  std::function<void(const std::filesystem::path& repo_cache)> before_fetch;
};

// The local path to read. A path that exists always wins over a Hub id of
// the same spelling; text that is neither is returned as it is, for the
// checkpoint reader to refuse by name. UsageError for --gguf-file with a
// local path or with a file already in the id.
std::filesystem::path model_argument(const std::string& text, const ModelArgumentOptions& options);

// The help text's paragraph on the forms above (inspect and export).
extern const char* const kModelArgumentHelp;

}  // namespace llm2hef::cli
