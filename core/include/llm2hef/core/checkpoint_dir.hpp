// A Hugging Face checkpoint folder as an sdk::Checkpoint.
//
// Reads config.json (required), generation_config.json, tokenizer_config.json
// and tokenizer.json (optional), and the weights from model.safetensors or
// from the shards named by model.safetensors.index.json. Every file is
// validated when the folder is opened, so a broken checkpoint fails before
// anything is written.
#pragma once

#include <filesystem>
#include <memory>

#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// Throws BadInput naming the folder or the offending file (and tensor).
std::unique_ptr<sdk::Checkpoint> open_checkpoint(const std::filesystem::path& dir);

}  // namespace llm2hef::core
