// hailo-config.json's raw JSON judged the way hailort v5.2.0's genai server
// reads it: LLMServer::parse_config_json (hailort_server/genai/llm/llm_server.cpp
// 108-196) reads each key with nlohmann 3.11 `get<T>()`, so a key of the
// wrong JSON type either throws (the model does not load) or is silently
// converted (a float truncated, a negative u32 wrapped, a bool read as 0/1).
// Both are errors here; hailo-contract.md section 6.
#include "hailo_config_types.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "llm2hef/core/runtime/hailo_config.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::hef {

using nlohmann::json;
using rules::RuleOut;
namespace key = hailo_config_key;

namespace {

constexpr const char* kParser = "llm_server.cpp 108-196, parse_config_json";

enum class Kind { int32, u32, f32, boolean, string, int_list };

const char* cpp_type(Kind k) {
  switch (k) {
    case Kind::int32: return "int";
    case Kind::u32: return "uint32_t";
    case Kind::f32: return "float";
    case Kind::boolean: return "bool";
    case Kind::string: return "std::string";
    case Kind::int_list: return "std::vector<int>";
  }
  return "?";
}

// What nlohmann's get<T>() does with `v` when it is not exactly a T: the
// empty string when `v` is a proper T.
std::string scalar_problem(const json& v, Kind k) {
  const std::string got = std::string("a JSON ") + v.type_name();
  const std::string throws =
      got + ": get<" + cpp_type(k) + ">() throws (nlohmann type_error) and the model does not load";
  switch (k) {
    case Kind::string: return v.is_string() ? "" : throws;
    case Kind::boolean: return v.is_boolean() ? "" : throws;
    case Kind::f32:
      if (v.is_number()) return "";
      if (v.is_boolean()) return got + ": get<float>() silently reads it as " + (v.get<bool>() ? "1" : "0");
      return throws;
    case Kind::int32:
    case Kind::u32: {
      if (v.is_boolean())
        return got + ": get<" + cpp_type(k) + ">() silently reads it as " + (v.get<bool>() ? "1" : "0");
      if (v.is_number_float()) return got + " (" + v.dump() + "): get<" + cpp_type(k) + ">() silently truncates it";
      if (!v.is_number()) return throws;
      if (k == Kind::u32) {
        if (v.is_number_unsigned() ? v.get<uint64_t>() > UINT32_MAX
                                   : v.get<int64_t>() < 0 || v.get<int64_t>() > int64_t{UINT32_MAX})
          return "the value " + v.dump() + " does not fit uint32_t: get<uint32_t>() silently wraps it";
      } else {
        if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t{INT32_MAX}
                                   : v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX)
          return "the value " + v.dump() + " does not fit int: get<int>() silently wraps it";
      }
      return "";
    }
    case Kind::int_list: break;
  }
  return "";
}

std::string value_problem(const json& v, Kind k) {
  if (k != Kind::int_list) return scalar_problem(v, k);
  if (!v.is_array())
    return std::string("a JSON ") + v.type_name() +
           ": get<std::vector<int>>() throws (a list of integers is needed, "
           "even for one id) and the model does not load";
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string p = scalar_problem(v[i], Kind::int32);
    if (!p.empty()) return "element " + std::to_string(i) + " is " + p;
  }
  return "";
}

struct Key {
  const char* name;
  Kind kind;
};

// The C++ type the server reads each key as, in the order they are reported.
const std::vector<Key> kTopLevel = {{key::kEosTokenId, Kind::int32},
                                    {key::kChatTemplate, Kind::string},
                                    {key::kStopTokenId, Kind::int_list},
                                    {key::kBeginOfReasoningTokenId, Kind::int32},
                                    {key::kEndOfReasoningTokenId, Kind::int32}};
const std::vector<Key> kGeneration = {{key::kMaxNewTokens, Kind::u32},
                                      {key::kTemperature, Kind::f32},
                                      {key::kTopP, Kind::f32},
                                      {key::kTopK, Kind::u32},
                                      {key::kRepetitionPenalty, Kind::f32},
                                      {key::kDoSample, Kind::boolean}};
const std::vector<Key> kPreProcess = {{key::kKvCacheSize, Kind::u32},
                                      {key::kNumAttentionHeads, Kind::u32},
                                      {key::kNumKeyValueHeads, Kind::u32},
                                      {key::kPrefillInputTokensCount, Kind::u32},
                                      {key::kMropeSection, Kind::int_list}};
// One suffix per runtime input role (the runtime contract's table; its
// string_views view string literals, so data() is null-terminated).
const std::vector<Key> kSuffixes = [] {
  std::vector<Key> keys;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) keys.push_back({input.role.data(), Kind::string});
  return keys;
}();

// ---- rule "hailo-config": every key of the wrong type, a required key missing ----

void check_key_types(const json& obj, const std::string& prefix, const std::vector<Key>& keys, RuleOut& out,
                     const std::string& where) {
  for (const Key& k : keys) {
    if (!obj.contains(k.name)) continue;
    const std::string p = value_problem(obj[k.name], k.kind);
    if (!p.empty())
      out.fail(where + ": " + prefix + k.name + " is read as " + cpp_type(k.kind) + " and is " + p + " (" + kParser +
               ")");
  }
}

// The keys of each section the server reads.
const std::vector<Key>& section_keys(const char* section) {
  if (std::strcmp(section, key::kDefaultGenerationParams) == 0) return kGeneration;
  if (std::strcmp(section, key::kPreProcessParams) == 0) return kPreProcess;
  return kSuffixes;
}

}  // namespace

bool check_config_document(const ConfigText& c, RuleOut& out) {
  if (!c.present) return false;
  auto err = [&](const std::string& m) { out.fail(c.where + ": " + m); };
  if (!c.parse_error.empty()) {
    err("not valid JSON (the server's nlohmann::json::parse throws, genai/utils.hpp 156-161): " + c.parse_error);
    return false;
  }
  const json& cfg = c.doc;
  if (!cfg.is_object()) {
    err(std::string("the top level is a JSON ") + cfg.type_name() +
        ", not an object: contains(\"eos_token_id\") is false and the server returns HAILO_INVALID_ARGUMENT (" +
        kParser + ")");
    return false;
  }
  if (!cfg.contains(key::kEosTokenId))
    err(std::string(
            "eos_token_id is missing: the server returns HAILO_INVALID_ARGUMENT and the model does not load (") +
        kParser + ")");
  check_key_types(cfg, "", kTopLevel, out, c.where);
  return true;
}

// A section that is not an object is skipped by the server (contains() is
// false for every key): every value in it silently takes its default.
bool check_config_section(const ConfigText& c, const char* section, RuleOut& out) {
  if (!c.doc.contains(section)) return false;
  const json& s = c.doc[section];
  if (!s.is_object()) {
    out.fail(c.where + ": " + section + " is a JSON " + s.type_name() +
             ", not an object: the server's contains() is false for all its keys, so every one silently takes its "
             "default (" +
             kParser + ")");
    return false;
  }
  check_key_types(s, std::string(section) + ".", section_keys(section), out, c.where);
  return true;
}

void check_prefill_count_present(const ConfigText& c, RuleOut& out) {
  const bool present = c.doc.contains(key::kPreProcessParams) && c.doc[key::kPreProcessParams].is_object() &&
                       c.doc[key::kPreProcessParams].contains(key::kPrefillInputTokensCount);
  if (!present)
    out.fail(c.where + ": pre_process_params.prefill_input_tokens_count is missing: the server silently uses " +
             std::to_string(kRuntimeDefaultPrefillTokens) + ", whatever the HEF was compiled for");
}

}  // namespace llm2hef::core::hef
