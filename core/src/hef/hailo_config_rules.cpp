// hailo-config.json judged the way hailort v5.2.0's genai server reads it:
// LLMServer::parse_config_json (hailort_server/genai/llm/llm_server.cpp
// 108-196) reads each key with nlohmann 3.11 `get<T>()`, so a key of the
// wrong JSON type either throws (the model does not load) or is silently
// converted (a float truncated, a negative u32 wrapped, a bool read as 0/1).
// Both are errors here; hailo-contract.md section 6.
#include <cstdint>
#include <iterator>
#include <limits>
#include <vector>

#include "hailo_config_rules.hpp"
#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/chat/template_edits.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/runtime_contract.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core::hef {

using nlohmann::json;
using rules::RuleOut;
using rules::Severity;

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

const Key kTopLevel[] = {{"eos_token_id", Kind::int32},
                         {"chat_template", Kind::string},
                         {"stop_token_id", Kind::int_list},
                         {"begin_of_reasoning_token_id", Kind::int32},
                         {"end_of_reasoning_token_id", Kind::int32}};
const Key kGeneration[] = {{"max_new_tokens", Kind::u32},
                           {"temperature", Kind::f32},
                           {"top_p", Kind::f32},
                           {"top_k", Kind::u32},
                           {"repetition_penalty", Kind::f32},
                           {"do_sample", Kind::boolean}};
const Key kPreProcess[] = {{"kv_cache_size", Kind::u32},
                           {"num_attention_heads", Kind::u32},
                           {"num_key_value_heads", Kind::u32},
                           {"prefill_input_tokens_count", Kind::u32},
                           {"mrope_section", Kind::int_list}};
// One suffix per runtime input role (the runtime contract's table; its
// string_views view string literals, so data() is null-terminated).
const std::vector<Key> kSuffixes = [] {
  std::vector<Key> keys;
  for (const sdk::RuntimeInput& input : sdk::kRuntimeInputs) keys.push_back({input.role.data(), Kind::string});
  return keys;
}();

// ---- rule "hailo-config": every key of the wrong type, a required key missing ----

void check_key_types(const json& obj, const std::string& prefix, const Key* begin, const Key* end, RuleOut& out,
                     const std::string& where) {
  for (const Key* k = begin; k != end; ++k) {
    if (!obj.contains(k->name)) continue;
    const std::string p = value_problem(obj[k->name], k->kind);
    if (!p.empty())
      out.fail(where + ": " + prefix + k->name + " is read as " + cpp_type(k->kind) + " and is " + p + " (" + kParser +
               ")");
  }
}

// A section that is not an object is skipped by the server (contains() is
// false for every key): every value in it silently takes its default.
const json* config_section(const ConfigText& c, const char* name, RuleOut& out) {
  if (!c.doc.contains(name)) return nullptr;
  const json& s = c.doc[name];
  if (!s.is_object()) {
    out.fail(c.where + ": " + name + " is a JSON " + s.type_name() +
             ", not an object: the server's contains() is false for all its keys, so every one silently takes its "
             "default (" +
             kParser + ")");
    return nullptr;
  }
  return &s;
}

void check_config_keys(const ConfigText& c, RuleOut& out) {
  if (!c.present) return;
  auto err = [&](const std::string& m) { out.fail(c.where + ": " + m); };
  if (!c.parse_error.empty()) {
    err("not valid JSON (the server's nlohmann::json::parse throws, genai/utils.hpp 156-161): " + c.parse_error);
    return;
  }
  const json& cfg = c.doc;
  if (!cfg.is_object()) {
    err(std::string("the top level is a JSON ") + cfg.type_name() +
        ", not an object: contains(\"eos_token_id\") is false and the server returns HAILO_INVALID_ARGUMENT (" +
        kParser + ")");
    return;
  }
  if (!cfg.contains("eos_token_id"))
    err(std::string(
            "eos_token_id is missing: the server returns HAILO_INVALID_ARGUMENT and the model does not load (") +
        kParser + ")");
  check_key_types(cfg, "", std::begin(kTopLevel), std::end(kTopLevel), out, c.where);
  if (const json* g = config_section(c, "default_generation_params", out))
    check_key_types(*g, "default_generation_params.", std::begin(kGeneration), std::end(kGeneration), out, c.where);
  if (const json* s = config_section(c, "input_layers_names_suffixes", out)) {
    check_key_types(*s, "input_layers_names_suffixes.", kSuffixes.data(), kSuffixes.data() + kSuffixes.size(), out,
                    c.where);
    for (const auto& [role, suffix] : s->items())
      if (suffix.is_string() && suffix.get<std::string>().empty())
        err("input_layers_names_suffixes." + role +
            " is empty: every layer name ends with the empty string, so the runtime would bind " + role +
            " to whichever input it meets first");
  }
  const json* pp = config_section(c, "pre_process_params", out);
  if (pp) {
    check_key_types(*pp, "pre_process_params.", std::begin(kPreProcess), std::end(kPreProcess), out, c.where);
    if (pp->contains("prefill_input_tokens_size"))
      err("pre_process_params.prefill_input_tokens_size is never read (the server reads prefill_input_tokens_count, "
          "llm_server.cpp 167-168): the prefill length would silently be " +
          std::to_string(kRuntimeDefaultPrefillTokens));
    for (const char* k : {"kv_cache_size", "num_attention_heads", "num_key_value_heads", "prefill_input_tokens_count"})
      if (pp->contains(k) && value_problem((*pp)[k], Kind::u32).empty() && (*pp)[k].get<uint64_t>() == 0)
        err(std::string("pre_process_params.") + k + " is 0; it sizes the runtime's mask, RoPE or prefill buffers");
  }
  if (!pp || !pp->contains("prefill_input_tokens_count"))
    err("pre_process_params.prefill_input_tokens_count is missing: the server silently uses " +
        std::to_string(kRuntimeDefaultPrefillTokens) + ", whatever the HEF was compiled for");
}

// ---- rule "stop-tokens": only stop_token_id ends a generation ----
// (llm_server.cpp 821-855, 958-962); eos_token_id only seeds the recovery sequence.

void check_stop_tokens(const ConfigText& c, RuleOut& out) {
  if (!c.present || !c.doc.is_object()) return;  // reported by "hailo-config"
  const json& cfg = c.doc;
  const bool stop_ok = cfg.contains("stop_token_id") && value_problem(cfg["stop_token_id"], Kind::int_list).empty();
  if (!cfg.contains("stop_token_id")) {
    out.fail(c.where +
             ": stop_token_id is missing: only stop_token_id stops generation (llm_server.cpp 821-855, "
             "958-962), so every answer runs to max_new_tokens");
  } else if (stop_ok && cfg.contains("eos_token_id") && value_problem(cfg["eos_token_id"], Kind::int32).empty()) {
    const int eos = cfg["eos_token_id"].get<int>();
    bool found = false;
    for (const auto& id : cfg["stop_token_id"]) found = found || id.get<int>() == eos;
    if (!found)
      out.fail(c.where + ": stop_token_id does not contain eos_token_id " + std::to_string(eos) +
               ": only stop_token_id stops generation (llm_server.cpp 821-855, 958-962), so generation does not "
               "stop at EOS");
  }
}

// ---- rules "chat-template" and "chat-template-render": hailort renders the
// template with minja when it loads the model (the load probe) ----

const std::string* template_of(const ConfigText& c) {
  if (!c.present || !c.doc.is_object() || !c.doc.contains("chat_template") || !c.doc["chat_template"].is_string())
    return nullptr;  // a missing or mistyped key is reported by "hailo-config"
  return c.doc["chat_template"].get_ptr<const std::string*>();
}

void check_template_parses(const ConfigText& c, RuleOut& out) {
  const std::string* tmpl = template_of(c);
  if (!tmpl) return;
  try {
    refuse_what_hailort_cannot_parse(*tmpl, c.where + ": chat_template");
  } catch (const Error& e) {
    out.fail(e.what());
  }
}

void check_template_renders(const ConfigText& c, RuleOut& out) {
  const std::string* tmpl = template_of(c);
  if (!tmpl) return;
  try {
    for (const jinja::DisarmedGuard& g : jinja::unspared_raise_calls(*tmpl, c.where + ": chat_template"))
      out.fail(c.where + ": chat_template, " + g.at + ": raise_exception('" + g.message +
               "') also raises on hailort's placeholder message (role 'TMP'), which hailort renders when it loads the "
               "model: if that line is reached (role-order guards reach it) the model does not load. `llm2hef export` "
               "writes templates that spare the placeholder (docs/chat-templates.md)");
    for (const std::string& w : what_minja_cannot_render(*tmpl, c.where + ": chat_template"))
      out.fail(c.where + ": " + w);
  } catch (const Error&) {
    // A template the lexer cannot read is reported by "chat-template".
  }
}

}  // namespace

ConfigText parse_config_text(const std::string* text, std::string where) {
  ConfigText c;
  c.where = std::move(where);
  if (!text) return c;
  c.present = true;
  try {
    c.doc = sdk::parse_json(*text, c.where,
                            sdk::JsonLimits::small_file());  // bounded depth: a deep document must not crash llm2hef
  } catch (const BadInput& e) {
    c.parse_error = e.what();
    c.doc = json();
  }
  return c;
}

const std::vector<rules::Rule<ConfigText>>& hailo_config_rule_table() {
  static const std::vector<rules::Rule<ConfigText>> table = {
      {"hailo-config", "6", Severity::error, check_config_keys},
      {"stop-tokens", "6", Severity::warning, check_stop_tokens},
      {"chat-template", "6", Severity::error, check_template_parses},
      {"chat-template-render", "6", Severity::warning, check_template_renders},
  };
  return table;
}

std::vector<rules::Finding> check_hailo_config_text(const std::string& text, const std::string& where) {
  std::vector<rules::Finding> out;
  rules::RuleRunner runner(out);
  runner.run(hailo_config_rule_table(), parse_config_text(&text, where));
  return out;
}

}  // namespace llm2hef::core::hef
