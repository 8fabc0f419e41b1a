#include "llm2hef/core/rules/finding.hpp"

#include <algorithm>

namespace llm2hef::core::rules {

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::error: return "error";
    case Severity::warning: return "warning";
    case Severity::info: return "info";
  }
  return "?";
}

std::string finding_tag(const Finding& finding) {
  return "[" + finding.rule + (finding.section.empty() ? std::string() : ", section " + finding.section) + "]";
}

size_t Report::errors() const {
  return static_cast<size_t>(
      std::count_if(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::error; }));
}

size_t Report::warnings() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(),
                                           [](const Finding& f) { return f.severity == Severity::warning; }));
}

size_t Report::errors_in(const std::vector<std::string>& rules) const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(), [&](const Finding& f) {
    return f.severity == Severity::error && std::find(rules.begin(), rules.end(), f.rule) != rules.end();
  }));
}

}  // namespace llm2hef::core::rules
