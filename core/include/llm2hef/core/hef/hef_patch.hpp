// `llm2hef hef set-config`: a new hailo-config.json in a compiled HEF, without
// the DFC (hailo-contract.md section 10, "Editing a HEF").
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/hef_file.hpp"

namespace llm2hef::core::hef {

struct SetConfigResult {
  uint64_t old_size = 0, new_size = 0;
  uint64_t config_offset = 0, config_size = 0, config_xxh3 = 0;
  uint64_t dead_bytes = 0;         // the previous hailo-config.json, when it stays in place unreferenced
  uint64_t dropped_bytes = 0;      // unreferenced bytes after the moved resources, not copied
  std::vector<std::string> moved;  // resources written at a new offset (bytes unchanged)
  // Warnings about the new config against the HEF (e.g. stop-tokens).
  std::vector<rules::Finding> findings;
};

// Writes `output` (atomically; `input` is never modified) as `input` with its
// hailo-config.json resource replaced by `config_text`. Version 3 HEFs only.
//
// Refused before anything is written (BadInput listing every problem): a
// config the genai server would reject or misread (types, required keys:
// check_hailo_config_text), and one that contradicts the HEF (heads, cache
// size, input widths, token ids against the vocabulary: the same rules as
// `hef check`, config_dependent_rules()).
//
// Layout (hailo-contract.md section 9, optimize_memory_on_device): the
// runtime needs tokenizer.json and embeddings.bin to be the last bytes. So
// everything before the first of them is copied unchanged (CCWs, other
// resources, unknown bytes: their offsets keep their meaning), then the
// resources that followed it (bytes unchanged, offsets moved), the new
// config, and tokenizer.json and embeddings.bin last, each moved resource
// keeping its offset modulo 8. A previous config lying just before them is
// reclaimed; one elsewhere stays as dead space. The proto is re-emitted field
// by field with only the offsets, the config's size and xxhash changed; the
// padding is resized so the CCWs keep their 4 KiB alignment; proto and
// whole-file XXH3 (a proto hash always, which genai needs) and all header
// sizes are redone.
// `hailo_ollama`: hailo-ollama will serve the output, so a chat template its
// older minja cannot render (hef check's rule chat-template-ollama) is refused
// too, before anything is written.
SetConfigResult set_hailo_config(const std::filesystem::path& input, const std::string& config_text,
                                 const std::filesystem::path& output, bool replace,
                                 const std::function<void(uint64_t done, uint64_t total)>& progress = {},
                                 bool hailo_ollama = true);

}  // namespace llm2hef::core::hef
