// What a checker reports, shared by `llm2hef lint` and `llm2hef hef check`
// (and what they feed: export's own lint, set-config, package): one finding
// and report type, so both speak of rules, sections and severities alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::core::rules {

// error: the file is refused, or the tool that reads it misbehaves;
// warning: it works, but not as intended; info: a fact worth showing.
enum class Severity { error, warning, info };

const char* severity_name(Severity severity);

// The part of the checked file a finding is about, for a checker that judges
// parts (lint: "node", "input", "output", or "model" with no name). hef
// check's findings are about the whole file and have none.
struct Subject {
  std::string kind;
  std::string name;  // empty for the whole of a kind ("model")
  std::string op;    // what a node computes (lint: its op type); empty otherwise
};

struct Finding {
  std::string rule;  // e.g. "expand", "network-groups"
  // The hailo-contract.md section(s) it cites, as the rule table writes them
  // ("9", "8, 9"); empty when no section is about it (an ONNX IR rule, or
  // agreement with llm2hef's own manifest).
  std::string section;
  Severity severity = Severity::error;
  std::string message;
  std::optional<Subject> subject = std::nullopt;
};

// "[rule, section N]", or "[rule]" for a finding that cites no section.
std::string finding_tag(const Finding& finding);

struct Report {
  std::string file;
  std::vector<Finding> findings;  // in the order the rules emitted them
  // The rules that ran and found nothing, for a checker that lists them
  // (hef check; lint's rules run once per node, and it does not).
  std::optional<std::vector<std::string>> passed;
  // What the check derived along the way (hef check: vocab, hidden, ...);
  // null for a checker that derives nothing.
  nlohmann::json derived;

  size_t errors() const;
  size_t warnings() const;
  // Errors of these rules only.
  size_t errors_in(const std::vector<std::string>& rules) const;
};

}  // namespace llm2hef::core::rules
