// A Hugging Face checkpoint folder as a CheckpointReader (an sdk::Checkpoint),
// and open_checkpoint, which opens a folder or a GGUF file.
//
// Reads config.json (required), generation_config.json, tokenizer_config.json
// and tokenizer.json (optional), and the weights from model.safetensors or
// from the shards named by model.safetensors.index.json. Every file is
// validated when the folder is opened, so a broken checkpoint fails before
// anything is written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "llm2hef/core/checkpoint/checkpoint_reader.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// Throws BadInput naming the folder or the offending file (and tensor). With
// NonFinitePolicy::refuse, reading a non-finite weight throws BadInput.
std::unique_ptr<CheckpointReader> open_checkpoint(const std::filesystem::path& dir,
                                                  NonFinitePolicy nonfinite = NonFinitePolicy::record);

// The model's name for reports and the DFC network name: the checkpoint's
// own (a GGUF's metadata, not the file name, which carries the
// quantization), else the folder's name, or, for a Hugging Face cache
// snapshot (models--ORG--NAME/snapshots/HASH), the repository's NAME rather
// than the commit hash.
std::string checkpoint_model_name(const CheckpointReader& ckpt, const std::filesystem::path& dir);

// The checkpoint's parameters: every tensor's elements. Each count is bounded
// by its bytes in the file; a sum past 2^63 is refused (BadInput), never wrapped.
int64_t checkpoint_parameters(const sdk::Checkpoint& ckpt);

}  // namespace llm2hef::core
