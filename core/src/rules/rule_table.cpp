#include "rule_table.hpp"

namespace llm2hef::core::rules {

void RuleRunner::add(Finding finding) {
  if (finding.severity != Severity::info) failed_.insert(finding.rule);
  if (finding.severity == Severity::error && finding.subject)
    error_subjects_.emplace(finding.subject->kind, finding.subject->name);
  findings_.push_back(std::move(finding));
}

std::vector<std::string> RuleRunner::passed() const {
  std::vector<std::string> out;
  for (const auto& rule : order_)
    if (!failed_.count(rule)) out.push_back(rule);
  return out;
}

}  // namespace llm2hef::core::rules
