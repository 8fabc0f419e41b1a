// The rule table of hailo-config.json, the genai server's settings
// (hailo-contract.md section 6): the "hailo-config" rule runs the raw-JSON
// type checks (hailo_config_types.cpp) and judges the values they let
// through; the other rules judge what the server does with the typed keys.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "hailo_config_rules.hpp"
#include "hailo_config_types.hpp"
#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/chat/older_minja.hpp"
#include "llm2hef/core/chat/template_edits.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/runtime/hailo_config.hpp"
#include "llm2hef/core/runtime/hef_names.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core::hef {

using nlohmann::json;
using rules::RuleOut;
using rules::Severity;
namespace key = hailo_config_key;

namespace {

// A key the server never reads, written for prefill_input_tokens_count.
constexpr const char* kPrefillSizeMisspelling = "prefill_input_tokens_size";

// get<int>() reads an integer unchanged only in int's range (beyond it, the
// "hailo-config" rule reports the wrap).
bool read_as_int_unchanged(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

// ---- rule "hailo-config": the type checks, and the values they let through ----

// Every layer name ends with the empty string.
void check_suffixes_not_empty(const ConfigText& c, RuleOut& out) {
  for (const auto& [role, suffix] : c.config.input_layers_names_suffixes->by_role)
    if (suffix.empty())
      out.fail(c.where + ": input_layers_names_suffixes." + role +
               " is empty: every layer name ends with the empty string, so the runtime would bind " + role +
               " to whichever input it meets first");
}

void check_pre_process_values(const ConfigText& c, RuleOut& out) {
  const HailoPreProcessParams& pp = *c.config.pre_process_params;
  if (pp.other.contains(kPrefillSizeMisspelling))
    out.fail(c.where +
             ": pre_process_params.prefill_input_tokens_size is never read (the server reads "
             "prefill_input_tokens_count, llm_server.cpp 167-168): the prefill length would silently be " +
             std::to_string(kRuntimeDefaultPrefillTokens));
  const std::pair<const char*, const std::optional<int64_t>&> sizes[] =
      {{key::kKvCacheSize, pp.kv_cache_size},
       {key::kNumAttentionHeads, pp.num_attention_heads},
       {key::kNumKeyValueHeads, pp.num_key_value_heads},
       {key::kPrefillInputTokensCount, pp.prefill_input_tokens_count}};
  for (const auto& [name, value] : sizes)
    if (value == 0)
      out.fail(c.where + ": pre_process_params." + name +
               " is 0; it sizes the runtime's mask, RoPE or prefill buffers");
}

void check_config_keys(const ConfigText& c, RuleOut& out) {
  if (!check_config_document(c, out)) return;
  check_config_section(c, key::kDefaultGenerationParams, out);
  if (check_config_section(c, key::kInputLayersNamesSuffixes, out)) check_suffixes_not_empty(c, out);
  if (check_config_section(c, key::kPreProcessParams, out)) check_pre_process_values(c, out);
  check_prefill_count_present(c, out);
}

// ---- rule "stop-tokens": only stop_token_id ends a generation ----
// (llm_server.cpp 821-855, 958-962); eos_token_id only seeds the recovery sequence.

void check_stop_tokens(const ConfigText& c, RuleOut& out) {
  if (!c.present || !c.doc.is_object()) return;  // reported by "hailo-config"
  const HailoConfig& cfg = c.config;
  // A stop list or eos of the wrong type (or beyond int) is reported by "hailo-config".
  const bool stop_ok =
      cfg.stop_token_id && std::all_of(cfg.stop_token_id->begin(), cfg.stop_token_id->end(), read_as_int_unchanged);
  if (!cfg.stop_token_id && !cfg.has_untyped(key::kStopTokenId)) {
    out.fail(c.where +
             ": stop_token_id is missing: only stop_token_id stops generation (llm_server.cpp 821-855, "
             "958-962), so every answer runs to max_new_tokens");
  } else if (stop_ok && cfg.eos_token_id && read_as_int_unchanged(*cfg.eos_token_id)) {
    const int64_t eos = *cfg.eos_token_id;
    const bool found = std::find(cfg.stop_token_id->begin(), cfg.stop_token_id->end(), eos) != cfg.stop_token_id->end();
    if (!found)
      out.fail(c.where + ": stop_token_id does not contain eos_token_id " + std::to_string(eos) +
               ": only stop_token_id stops generation (llm_server.cpp 821-855, 958-962), so generation does not "
               "stop at EOS");
  }
}

// ---- rules "chat-template" and "chat-template-render": hailort renders the
// template with minja when it loads the model (the load probe) ----

const std::string* template_of(const ConfigText& c) {
  if (!c.config.chat_template) return nullptr;  // a missing or mistyped key is reported by "hailo-config"
  return &*c.config.chat_template;
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

// ---- rule "chat-template-ollama": hailo-ollama renders the template with
// the older minja it vendors (older_minja.hpp) on every request ----

bool served_by_hailo_ollama(const ConfigText& c) { return c.served_by_hailo_ollama; }

void check_template_for_hailo_ollama(const ConfigText& c, RuleOut& out) {
  const std::string* tmpl = template_of(c);
  if (!tmpl) return;
  try {
    for (const std::string& f :
         jinja::older_minja_summary(jinja::older_minja_findings(*tmpl, c.where + ": chat_template")))
      out.fail(c.where + ": chat_template, " + f +
               ": hailo-ollama v5.1.1 renders its manifest's copy of this template on every request with an older "
               "minja (google/minja ea5fe1b) that lacks it, so requests fail or render differently from Hugging "
               "Face. `llm2hef export` rewrites what has an exact equivalent (docs/chat-templates.md); pass "
               "--genai-only if hailo-ollama will not serve this HEF");
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
  c.config = read_hailo_config_keys(c.doc);
  return c;
}

const std::vector<rules::Rule<ConfigText>>& hailo_config_rule_table() {
  static const std::vector<rules::Rule<ConfigText>> table = {
      {"hailo-config", "6", Severity::error, check_config_keys},
      {"stop-tokens", "6", Severity::warning, check_stop_tokens},
      {"chat-template", "6", Severity::error, check_template_parses},
      {"chat-template-render", "6", Severity::warning, check_template_renders},
      {"chat-template-ollama", "6", Severity::error, check_template_for_hailo_ollama, served_by_hailo_ollama},
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
