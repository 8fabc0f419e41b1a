// The rest of the runtime contract table (hailo-contract.md sections 6 and 9):
// the genai runtime's defaults for hailo-config's pre_process_params, the
// names of the HEF resources it reads, and the suffixes that name its two
// network groups. Every reader in core takes them from here instead of
// spelling a value, a file name or a suffix.
//
// Why core and not the SDK, beside the runtime inputs
// (llm2hef/sdk/runtime_contract.hpp): the inputs are read by the graph
// builders the adapters call, so they are part of the adapter ABI. These
// facts are read only by core (the export's plan and resources, the model
// scripts, the HAR scopes, hef check and set-config); keeping them out of the
// SDK's public headers keeps them out of what plugins compile against. This
// header includes the SDK's, so one include gives the whole contract.
#pragma once

#include <cstdint>
#include <string_view>

#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

// What the server uses when hailo-config's pre_process_params leaves a value
// out (llm_server.cpp parse_config_json; hailo-contract.md section 6,
// "pre_process_params"). 2048 is also the context of Hailo's own Hailo-10H
// models (section 11), and Hailo's recipe quantizes with a 96-token prefill
// at cache 2048 (section 7).
inline constexpr int64_t kRuntimeDefaultCacheSize = 2048;     // kv_cache_size
inline constexpr int64_t kRuntimeDefaultAttentionHeads = 12;  // num_attention_heads
inline constexpr int64_t kRuntimeDefaultKeyValueHeads = 2;    // num_key_value_heads
inline constexpr int64_t kRuntimeDefaultPrefillTokens = 96;   // prefill_input_tokens_count

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
