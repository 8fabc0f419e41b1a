// `llm2hef hef set-config`: a new hailo-config.json in a compiled HEF, without
// the DFC (hailo-contract.md section 10, "Editing a HEF").
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "llm2hef/core/hef/hef_file.hpp"

namespace llm2hef::core::hef {

struct SetConfigResult {
  uint64_t old_size = 0, new_size = 0;
  uint64_t config_offset = 0, config_size = 0, config_xxh3 = 0;
  uint64_t dead_bytes = 0;  // the previous hailo-config.json, left in place
};

// Writes `output` (atomically; `input` is never modified) as `input` with its
// hailo-config.json resource replaced by `config_text`, which is validated
// first (BadInput listing every problem). Version 3 HEFs only.
//
// Layout: the new bytes are appended after the additional_info section and
// the old ones stay behind as dead space, so every other offset in the file
// (CCWs, other resources, anything a newer DFC stores there) keeps its
// meaning. The proto is re-emitted field by field with only that resource's
// offset, size and xxhash changed; the padding is resized so the CCWs keep
// their alignment; proto and whole-file XXH3 and all header sizes are redone.
SetConfigResult set_hailo_config(const std::filesystem::path& input, const std::string& config_text,
                                 const std::filesystem::path& output, bool replace,
                                 const std::function<void(uint64_t done, uint64_t total)>& progress = {});

}  // namespace llm2hef::core::hef
