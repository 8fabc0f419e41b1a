// Where the Hugging Face cache is and how the Hub is reached, read from the
// environment as huggingface_hub reads it (its constants.py), so that `hf`,
// transformers and llm2hef share one cache and one configuration.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace llm2hef::core::hub {

struct HubSettings {
  std::string endpoint;              // HF_ENDPOINT, default https://huggingface.co, no trailing '/'
  std::optional<std::string> token;  // HF_TOKEN, else the file `hf auth login` writes
  std::string token_origin;          // "HF_TOKEN" or the token file's path, for messages
  bool offline = false;              // HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE): 1, ON, YES or TRUE
  std::filesystem::path cache;       // HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub
};

// Throws BadInput naming the variable or file when a token holds a line
// break or another control character (it would end up in a request header).
HubSettings hub_settings_from_environment();

// <cache>/models--ORG--NAME
std::filesystem::path repo_cache_dir(const std::filesystem::path& cache, const std::string& repo);

}  // namespace llm2hef::core::hub
