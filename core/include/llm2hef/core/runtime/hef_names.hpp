// The rest of the runtime contract table (hailo-contract.md sections 6 and 9):
// the names of the HEF resources the genai runtime reads and the suffixes
// that name its two network groups. Every reader in core takes them from
// here instead of spelling a file name or a suffix.
//
// Why core and not the SDK, beside the runtime inputs and defaults
// (llm2hef/sdk/runtime_contract.hpp): the inputs are read by the graph
// builders the adapters call and the default cache by the decoder adapter,
// so they are part of what plugins compile against. These facts are read
// only by core (the export's resources, the model scripts, the HAR scopes,
// hef check and set-config), so they stay out of the SDK's public headers.
// This header includes the SDK's, so one include gives the whole contract.
#pragma once

#include <cstdint>
#include <string_view>

#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

// The runtime's defaults for pre_process_params live in the SDK's table
// (the decoder adapter chooses the default cache from the first); core reads
// them under its own names.
using sdk::kRuntimeDefaultAttentionHeads;
using sdk::kRuntimeDefaultCacheSize;
using sdk::kRuntimeDefaultKeyValueHeads;
using sdk::kRuntimeDefaultPrefillTokens;

// The four resources a genai HEF carries, named as the runtime's constants
// spell them (hailo-contract.md section 6, "The HEF then carries four
// resources").
inline constexpr char kResourceEmbeddings[] = "embeddings.bin";
inline constexpr char kResourceTheta[] = "rope_theta_data.bin";
inline constexpr char kResourceTokenizer[] = "tokenizer.json";
inline constexpr char kResourceHailoConfig[] = "hailo-config.json";

// The network groups the server looks for, by the suffix of their names
// (llm_server.cpp 46-68; hailo-contract.md section 9, "How the network groups
// are found"): `<x>__prefill` and `<x>__tbt`, the names the DFC's
// set_kv_cache_global_params gives the two HN scopes (section 3).
inline constexpr char kPrefillGroupSuffix[] = "__prefill";
inline constexpr char kTbtGroupSuffix[] = "__tbt";

}  // namespace llm2hef::core
