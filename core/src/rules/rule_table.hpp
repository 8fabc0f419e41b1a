// The rule machinery of every checker (lint, hef check, hailo-config.json),
// private to core/src. A checker keeps its own tables of rules and the facts
// they judge; this runs them and collects the report.
//
// A rule is one row {name, section, severity, check}: the name reports print,
// the hailo-contract.md section its findings cite, the severity of a failure,
// and the function that judges the facts the table shares. A name whose
// findings cite different sections (or judge different parts of a file) has
// one row per section, so each section is written once, next to its check.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "llm2hef/core/rules/finding.hpp"

namespace llm2hef::core::rules {

class RuleRunner;

// What one rule's check reports through: every finding carries the rule's
// name and section, and is about the part of the file the rule runs on
// unless the check names another.
class RuleOut {
 public:
  RuleOut(RuleRunner& runner, const char* name, const char* section, Severity severity,
          const std::optional<Subject>& about)
      : runner_(runner), name_(name), section_(section), severity_(severity), about_(about) {}
  // A failure, at the rule's severity.
  void fail(const std::string& message) { add(severity_, about_, message); }
  // A failure about another part of the file (e.g. a node found by a rule that runs on the whole model).
  void fail_about(const Subject& subject, const std::string& message) { add(severity_, subject, message); }
  // A lesser failure of an error rule: it works, but not as intended.
  void warn(const std::string& message) { add(Severity::warning, about_, message); }
  // A fact worth showing; the rule still passes.
  void note(const std::string& message) { add(Severity::info, about_, message); }
  // An earlier rule found an error about this part of the file.
  bool has_error_about(const Subject& subject) const;

 private:
  void add(Severity severity, const std::optional<Subject>& subject, const std::string& message);
  RuleRunner& runner_;
  const char* name_;
  const char* section_;
  Severity severity_;
  const std::optional<Subject>& about_;
};

template <class Facts>
struct Rule {
  const char* name;
  const char* section;  // hailo-contract.md section(s), as the findings cite them; "" for none
  Severity severity;    // of a failure
  void (*check)(const Facts&, RuleOut&);
  bool (*applies)(const Facts&) = nullptr;  // null: always; false: the rule does not run (and is not "passed")
};

// Runs rules in order and keeps the findings in the order the rules emit
// them, and the rules that ran and found nothing.
class RuleRunner {
 public:
  explicit RuleRunner(std::vector<Finding>& findings) : findings_(findings) {}

  // `about`: the part of the file these facts are (lint: a node, an input);
  // none when the rules judge the whole file.
  template <class Facts>
  void run(const Rule<Facts>& rule, const Facts& facts, const std::optional<Subject>& about = std::nullopt) {
    if (rule.applies && !rule.applies(facts)) return;
    ran(rule.name);
    RuleOut out(*this, rule.name, rule.section, rule.severity, about);
    rule.check(facts, out);
  }

  template <class Facts>
  void run(const std::vector<Rule<Facts>>& rules, const Facts& facts,
           const std::optional<Subject>& about = std::nullopt) {
    for (const auto& rule : rules) run(rule, facts, about);
  }

  void add(Finding finding);
  bool has_error_about(const Subject& subject) const { return error_subjects_.count({subject.kind, subject.name}) > 0; }
  // Rules that ran without an error or warning, in the order they first ran.
  std::vector<std::string> passed() const;

 private:
  void ran(const std::string& rule) {
    if (ran_.insert(rule).second) order_.push_back(rule);
  }

  std::vector<Finding>& findings_;
  std::set<std::string> failed_, ran_;
  std::vector<std::string> order_;
  std::set<std::pair<std::string, std::string>> error_subjects_;  // (kind, name) of every error's subject
};

inline bool RuleOut::has_error_about(const Subject& subject) const { return runner_.has_error_about(subject); }

inline void RuleOut::add(Severity severity, const std::optional<Subject>& subject, const std::string& message) {
  runner_.add({name_, section_, severity, message, subject});
}

}  // namespace llm2hef::core::rules
