// hailo-config.json, the genai runtime's settings resource (hailo-contract.md
// section 6), as one type. export writes it (make_hailo_config builds a
// HailoConfig, hailo_config_json writes it); hef check, set-config and
// package read it. Its keys are spelled only here (hailo_config_key) and in
// hailo_config.cpp.
//
// The server reads every key on its own (contains(), then get<T>()) and uses
// its default for a key left out, so every field is optional: a document is
// typed as it is, without defaults filled in. Numbers are held as the JSON
// holds them (integers as int64_t, the rest as double), not as the narrower
// C++ types the server converts them to: whether a value fits those is what
// the "hailo-config" rule judges (core/src/hef/hailo_config_types.cpp), on
// the raw JSON.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::core {

// The keys the server reads (hailort v5.2.0 LLMServer::parse_config_json).
namespace hailo_config_key {
inline constexpr const char* kEosTokenId = "eos_token_id";
inline constexpr const char* kStopTokenId = "stop_token_id";
inline constexpr const char* kChatTemplate = "chat_template";
inline constexpr const char* kBeginOfReasoningTokenId = "begin_of_reasoning_token_id";
inline constexpr const char* kEndOfReasoningTokenId = "end_of_reasoning_token_id";

inline constexpr const char* kDefaultGenerationParams = "default_generation_params";
inline constexpr const char* kMaxNewTokens = "max_new_tokens";
inline constexpr const char* kTemperature = "temperature";
inline constexpr const char* kTopP = "top_p";
inline constexpr const char* kTopK = "top_k";
inline constexpr const char* kRepetitionPenalty = "repetition_penalty";
inline constexpr const char* kDoSample = "do_sample";

inline constexpr const char* kPreProcessParams = "pre_process_params";
inline constexpr const char* kKvCacheSize = "kv_cache_size";
inline constexpr const char* kNumAttentionHeads = "num_attention_heads";
inline constexpr const char* kNumKeyValueHeads = "num_key_value_heads";
inline constexpr const char* kPrefillInputTokensCount = "prefill_input_tokens_count";
inline constexpr const char* kMropeSection = "mrope_section";

// Its keys are the runtime contract's input roles (sdk::kRuntimeInputs).
inline constexpr const char* kInputLayersNamesSuffixes = "input_layers_names_suffixes";
}  // namespace hailo_config_key

// In every struct, `other` holds the keys of that object the struct has no
// field for, as found: keys the server does not read, and (read_hailo_config_keys
// only) keys whose JSON type their field cannot hold. They are written back
// unchanged, so a document survives a read and a write.

// default_generation_params.
struct HailoGenerationParams {
  std::optional<int64_t> max_new_tokens;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<int64_t> top_k;
  std::optional<double> repetition_penalty;
  std::optional<bool> do_sample;
  nlohmann::json other = nlohmann::json::object();
};

// pre_process_params: the sizes the server builds the mask, the RoPE tables
// and the prefill buffers with.
struct HailoPreProcessParams {
  std::optional<int64_t> kv_cache_size;
  std::optional<int64_t> num_attention_heads;  // tiles of the mask and the q tables
  std::optional<int64_t> num_key_value_heads;  // tiles of the k tables
  std::optional<int64_t> prefill_input_tokens_count;
  std::optional<std::vector<int64_t>> mrope_section;
  nlohmann::json other = nlohmann::json::object();
};

// input_layers_names_suffixes: input role -> the suffix of the HEF input
// layer the server binds it to.
struct HailoInputSuffixes {
  std::map<std::string, std::string> by_role;  // every entry whose value is a string
  nlohmann::json other = nlohmann::json::object();

  // The suffix of `role`, or nullptr when the document gives none.
  const std::string* find(const std::string& role) const;
};

struct HailoConfig {
  std::optional<int64_t> eos_token_id;  // the only key the server requires
  std::optional<std::vector<int64_t>> stop_token_id;
  std::optional<std::string> chat_template;
  std::optional<int64_t> begin_of_reasoning_token_id;
  std::optional<int64_t> end_of_reasoning_token_id;
  std::optional<HailoGenerationParams> default_generation_params;
  std::optional<HailoPreProcessParams> pre_process_params;
  std::optional<HailoInputSuffixes> input_layers_names_suffixes;
  nlohmann::json other = nlohmann::json::object();

  // `key` (top level) is in the document but not held by a field: a key the
  // server does not read, or one of the wrong JSON type.
  bool has_untyped(const char* key) const { return other.contains(key); }
};

// The one writer: the typed fields set and every `other` key (keys sorted,
// as nlohmann::json orders them).
nlohmann::json hailo_config_json(const HailoConfig& config);

// Every key of `doc`, each judged on its own as the server reads it: a key
// whose value has the JSON type of its field (an integer that fits int64_t,
// a number, a bool, a string, a list of such integers, an object for a
// section) fills the field; any other value goes to `other`. A `doc` that is
// not an object gives an empty HailoConfig. For the rules that judge what
// they can of a document the "hailo-config" rule may have refused.
HailoConfig read_hailo_config_keys(const nlohmann::json& doc);

// The document as the server reads it, or nullopt when it is not an object,
// a section is not an object, or any key the server reads has another JSON
// type than its field. A document the "hailo-config" rule accepts always
// reads; the converse does not hold (that rule also checks ranges and
// required keys).
std::optional<HailoConfig> read_hailo_config(const nlohmann::json& doc);

}  // namespace llm2hef::core
