// The machinery shared by the rule tables of `hef check`
// (hef_contract.cpp) and of hailo-config.json (hailo_config_rules.cpp),
// private to core/src/hef.
//
// A rule is one row {name, section, severity, check}: the name reports print,
// the hailo-contract.md section its findings cite, the severity of a failure,
// and the function that judges the facts the table shares. A name whose
// findings cite different sections has one row per section, so each section
// is written once, next to its check.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "llm2hef/core/hef/hef_contract.hpp"

namespace llm2hef::core::hef {

class RuleRunner;

// What one rule's check reports through: every finding carries the rule's
// name and section.
class RuleOut {
 public:
  RuleOut(RuleRunner& runner, const char* name, const char* section, Severity severity)
      : runner_(runner), name_(name), section_(section), severity_(severity) {}
  // A failure, at the rule's severity.
  void fail(const std::string& message);
  // A lesser failure of an error rule: hailort runs, but not as intended.
  void warn(const std::string& message);
  // A fact worth showing; the rule still passes.
  void note(const std::string& message);

 private:
  RuleRunner& runner_;
  const char* name_;
  const char* section_;
  Severity severity_;
};

template <class Facts>
struct Rule {
  const char* name;
  const char* section;  // hailo-contract.md section(s), as the findings cite them
  Severity severity;    // of a failure
  void (*check)(const Facts&, RuleOut&);
  bool (*applies)(const Facts&) = nullptr;  // null: always; false: the rule does not run (and is not "passed")
  // Its errors depend on hailo-config.json: `hef set-config` refuses a new
  // config that makes it fail (config_dependent_rules()).
  bool gates_set_config = false;
};

constexpr bool kGatesSetConfig = true;

// Runs tables in order and keeps the report: findings in the order the rules
// emit them, and the rules that ran and found nothing.
class RuleRunner {
 public:
  explicit RuleRunner(std::vector<ContractFinding>& findings) : findings_(findings) {}

  template <class Facts>
  void run(const std::vector<Rule<Facts>>& rules, const Facts& facts) {
    for (const auto& rule : rules) {
      if (rule.applies && !rule.applies(facts)) continue;
      ran(rule.name);
      RuleOut out(*this, rule.name, rule.section, rule.severity);
      rule.check(facts, out);
    }
  }

  void add(const ContractFinding& finding) {
    findings_.push_back(finding);
    if (finding.severity != Severity::info) failed_.insert(finding.rule);
  }

  // Rules that ran without an error or warning, in the order they first ran.
  std::vector<std::string> passed() const {
    std::vector<std::string> out;
    for (const auto& rule : order_)
      if (!failed_.count(rule)) out.push_back(rule);
    return out;
  }

 private:
  void ran(const std::string& rule) {
    if (ran_.insert(rule).second) order_.push_back(rule);
  }

  std::vector<ContractFinding>& findings_;
  std::set<std::string> failed_, ran_;
  std::vector<std::string> order_;
};

inline void RuleOut::fail(const std::string& message) { runner_.add({name_, section_, severity_, message}); }
inline void RuleOut::warn(const std::string& message) { runner_.add({name_, section_, Severity::warning, message}); }
inline void RuleOut::note(const std::string& message) { runner_.add({name_, section_, Severity::info, message}); }

// hailo-config.json parsed once for its rules (and for the HEF rules that
// read its values).
struct ConfigText {
  std::string where;             // prefixes every message
  bool present = false;          // false: the HEF has none (the "resources" rule says so)
  nlohmann::json doc;            // the parsed document; null when absent or not JSON
  std::string parse_error;       // why it is not JSON
};
ConfigText parse_config_text(const std::string* text, std::string where);

// The hailo-config.json rules ("hailo-config", "stop-tokens"), in report order.
const std::vector<Rule<ConfigText>>& hailo_config_rule_table();

}  // namespace llm2hef::core::hef
