// The type checks of rule "hailo-config" (hailo_config_types.cpp), private to
// core/src/hef: hailo-config.json's raw JSON judged the way hailort v5.2.0's
// genai server reads it. They see the raw document, not the typed one,
// because a value of the wrong JSON type is exactly what they report.
#pragma once

#include "hailo_config_rules.hpp"

namespace llm2hef::core::hef {

// The document itself: not JSON, not an object, eos_token_id missing, and
// the types of the top-level keys. False when nothing more can be judged
// (no config, not JSON, not an object).
bool check_config_document(const ConfigText& c, rules::RuleOut& out);

// The types of one section's keys (default_generation_params,
// pre_process_params or input_layers_names_suffixes). False when the
// section is absent or not an object (reported: the server then silently
// takes every default).
bool check_config_section(const ConfigText& c, const char* section, rules::RuleOut& out);

// pre_process_params.prefill_input_tokens_count is in the document (of
// whatever type: a wrong one is reported by check_config_section).
void check_prefill_count_present(const ConfigText& c, rules::RuleOut& out);

}  // namespace llm2hef::core::hef
