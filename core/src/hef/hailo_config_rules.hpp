// The rule table of hailo-config.json (hailo_config_rules.cpp), private to
// core/src/hef: `hef check` (hef_contract.cpp) runs it between its own
// tables, whose rules read the same parsed config. The tables run on the rule
// machinery every checker uses (core/src/rules/rule_table.hpp).
//
// Two readings of the one document: the raw JSON, which the type checks of
// rule "hailo-config" judge (hailo_config_types.cpp: a wrong JSON type is
// the finding), and the typed keys (llm2hef/core/runtime/hailo_config.hpp),
// which every other rule reads.
#pragma once

#include <string>
#include <vector>

#include "../rules/rule_table.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/runtime/hailo_config.hpp"

namespace llm2hef::core::hef {

// hailo-config.json parsed once for its rules (and for the HEF rules that
// read its values).
struct ConfigText {
  std::string where;        // prefixes every message
  bool present = false;     // false: the HEF has none (the "resources" rule says so)
  nlohmann::json doc;       // the parsed document; null when absent or not JSON
  std::string parse_error;  // why it is not JSON
  // doc's keys, each typed when its JSON type is its field's
  // (read_hailo_config_keys); empty when doc is not an object. The rules
  // run on documents the type checks refuse too, so each rule judges the
  // keys that could be read and leaves the others to "hailo-config".
  HailoConfig config;
  // The chat template will also be rendered by hailo-ollama's older minja
  // (ContractOptions::hailo_ollama); not when export or set-config judge a
  // config on its own.
  bool served_by_hailo_ollama = false;
};
ConfigText parse_config_text(const std::string* text, std::string where);

// The hailo-config.json rules ("hailo-config", "stop-tokens", "chat-template",
// "chat-template-render", "chat-template-ollama"), in report order.
const std::vector<rules::Rule<ConfigText>>& hailo_config_rule_table();

}  // namespace llm2hef::core::hef
