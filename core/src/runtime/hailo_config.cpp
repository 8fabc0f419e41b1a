#include "llm2hef/core/runtime/hailo_config.hpp"

#include <cstdint>
#include <utility>

#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

using nlohmann::json;
namespace key = hailo_config_key;

const std::string* HailoInputSuffixes::find(const std::string& role) const {
  const auto it = by_role.find(role);
  return it == by_role.end() ? nullptr : &it->second;
}

namespace {

// ---- one JSON value as a field's type, or nullopt ----

std::optional<int64_t> as_int(const json& v) {
  if (!v.is_number_integer()) return std::nullopt;  // floats and bools are not integers here
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return v.get<int64_t>();
}

std::optional<double> as_number(const json& v) {
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

std::optional<bool> as_bool(const json& v) {
  if (!v.is_boolean()) return std::nullopt;
  return v.get<bool>();
}

std::optional<std::string> as_string(const json& v) {
  if (!v.is_string()) return std::nullopt;
  return v.get<std::string>();
}

std::optional<std::vector<int64_t>> as_int_list(const json& v) {
  if (!v.is_array()) return std::nullopt;
  std::vector<int64_t> ids;
  for (const json& e : v) {
    const auto id = as_int(e);
    if (!id) return std::nullopt;
    ids.push_back(*id);
  }
  return ids;
}

// Reads one object's keys into typed fields: `other` starts as the whole
// object and loses each key a field takes, so what is left is what no field
// holds. A key present but of another JSON type than its field sets
// `untyped`, which makes the strict reading refuse the document.
class ObjectReader {
 public:
  ObjectReader(const json& obj, json& other, bool& untyped) : obj_(obj), other_(other), untyped_(untyped) {
    other_ = obj;
  }

  template <class T, class Convert>
  void take(const char* name, std::optional<T>& field, Convert convert) {
    if (!obj_.contains(name)) return;
    if (auto value = convert(obj_[name])) {
      field = std::move(*value);
      other_.erase(name);
    } else {
      untyped_ = true;
    }
  }

 private:
  const json& obj_;
  json& other_;
  bool& untyped_;
};

HailoGenerationParams generation_params(const json& v, bool& untyped) {
  HailoGenerationParams g;
  ObjectReader r(v, g.other, untyped);
  r.take(key::kMaxNewTokens, g.max_new_tokens, as_int);
  r.take(key::kTemperature, g.temperature, as_number);
  r.take(key::kTopP, g.top_p, as_number);
  r.take(key::kTopK, g.top_k, as_int);
  r.take(key::kRepetitionPenalty, g.repetition_penalty, as_number);
  r.take(key::kDoSample, g.do_sample, as_bool);
  return g;
}

HailoPreProcessParams pre_process_params(const json& v, bool& untyped) {
  HailoPreProcessParams p;
  ObjectReader r(v, p.other, untyped);
  r.take(key::kKvCacheSize, p.kv_cache_size, as_int);
  r.take(key::kNumAttentionHeads, p.num_attention_heads, as_int);
  r.take(key::kNumKeyValueHeads, p.num_key_value_heads, as_int);
  r.take(key::kPrefillInputTokensCount, p.prefill_input_tokens_count, as_int);
  r.take(key::kMropeSection, p.mrope_section, as_int_list);
  return p;
}

// Every entry whose value is a string; another value is kept in `other`, and
// is untyped when its key is a runtime input role (the server reads those).
HailoInputSuffixes input_suffixes(const json& v, bool& untyped) {
  HailoInputSuffixes s;
  for (const auto& [role, suffix] : v.items()) {
    if (suffix.is_string()) {
      s.by_role[role] = suffix.get<std::string>();
    } else {
      s.other[role] = suffix;
      if (sdk::find_runtime_input(role)) untyped = true;
    }
  }
  return s;
}

// A section: an object, read by `read`; anything else is not typed (the
// converter's nullopt leaves it in `other` and marks it untyped).
template <class Section>
auto section(bool& untyped, Section (*read)(const json&, bool&)) {
  return [&untyped, read](const json& v) -> std::optional<Section> {
    if (!v.is_object()) return std::nullopt;
    return read(v, untyped);
  };
}

// The keys of `doc` as read_hailo_config_keys types them; `untyped` is set
// when a key the server reads is of another JSON type than its field.
HailoConfig read_keys(const json& doc, bool& untyped) {
  HailoConfig c;
  if (!doc.is_object()) return c;
  ObjectReader r(doc, c.other, untyped);
  r.take(key::kEosTokenId, c.eos_token_id, as_int);
  r.take(key::kStopTokenId, c.stop_token_id, as_int_list);
  r.take(key::kChatTemplate, c.chat_template, as_string);
  r.take(key::kBeginOfReasoningTokenId, c.begin_of_reasoning_token_id, as_int);
  r.take(key::kEndOfReasoningTokenId, c.end_of_reasoning_token_id, as_int);
  r.take(key::kDefaultGenerationParams, c.default_generation_params, section(untyped, generation_params));
  r.take(key::kPreProcessParams, c.pre_process_params, section(untyped, pre_process_params));
  r.take(key::kInputLayersNamesSuffixes, c.input_layers_names_suffixes, section(untyped, input_suffixes));
  return c;
}

// ---- writing ----

template <class T>
void put(json& obj, const char* name, const std::optional<T>& field) {
  if (field) obj[name] = *field;
}

json generation_params_json(const HailoGenerationParams& g) {
  json obj = g.other.is_object() ? g.other : json::object();
  put(obj, key::kMaxNewTokens, g.max_new_tokens);
  put(obj, key::kTemperature, g.temperature);
  put(obj, key::kTopP, g.top_p);
  put(obj, key::kTopK, g.top_k);
  put(obj, key::kRepetitionPenalty, g.repetition_penalty);
  put(obj, key::kDoSample, g.do_sample);
  return obj;
}

json pre_process_params_json(const HailoPreProcessParams& p) {
  json obj = p.other.is_object() ? p.other : json::object();
  put(obj, key::kKvCacheSize, p.kv_cache_size);
  put(obj, key::kNumAttentionHeads, p.num_attention_heads);
  put(obj, key::kNumKeyValueHeads, p.num_key_value_heads);
  put(obj, key::kPrefillInputTokensCount, p.prefill_input_tokens_count);
  put(obj, key::kMropeSection, p.mrope_section);
  return obj;
}

json input_suffixes_json(const HailoInputSuffixes& s) {
  json obj = s.other.is_object() ? s.other : json::object();
  for (const auto& [role, suffix] : s.by_role) obj[role] = suffix;
  return obj;
}

}  // namespace

json hailo_config_json(const HailoConfig& c) {
  json doc = c.other.is_object() ? c.other : json::object();
  put(doc, key::kEosTokenId, c.eos_token_id);
  put(doc, key::kStopTokenId, c.stop_token_id);
  put(doc, key::kChatTemplate, c.chat_template);
  put(doc, key::kBeginOfReasoningTokenId, c.begin_of_reasoning_token_id);
  put(doc, key::kEndOfReasoningTokenId, c.end_of_reasoning_token_id);
  if (c.default_generation_params)
    doc[key::kDefaultGenerationParams] = generation_params_json(*c.default_generation_params);
  if (c.pre_process_params) doc[key::kPreProcessParams] = pre_process_params_json(*c.pre_process_params);
  if (c.input_layers_names_suffixes)
    doc[key::kInputLayersNamesSuffixes] = input_suffixes_json(*c.input_layers_names_suffixes);
  return doc;
}

HailoConfig read_hailo_config_keys(const json& doc) {
  bool untyped = false;
  return read_keys(doc, untyped);
}

std::optional<HailoConfig> read_hailo_config(const json& doc) {
  if (!doc.is_object()) return std::nullopt;
  bool untyped = false;
  HailoConfig c = read_keys(doc, untyped);
  if (untyped) return std::nullopt;
  return c;
}

}  // namespace llm2hef::core
