#include "llm2hef/core/rules/render.hpp"

#include <algorithm>
#include <sstream>

#include "llm2hef/core/io/contract_doc.hpp"

namespace llm2hef::core::rules {

using nlohmann::json;

namespace {

bool cites_a_section(const Finding& f) { return !f.section.empty(); }

std::string subject_text(const Subject& s) {
  std::string text = s.kind;
  if (!s.name.empty()) text += " '" + s.name + "'";
  if (!s.op.empty()) text += " (" + s.op + ")";
  return text;
}

std::string count_text(size_t n, const char* noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

json null_if_empty(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

std::string report_text(const Report& report) {
  std::ostringstream out;
  out << report.file << "\n";
  for (const Finding& f : report.findings) {
    out << "  " << severity_name(f.severity) << " " << finding_tag(f) << " ";
    if (f.subject) out << subject_text(*f.subject) << ": ";
    out << f.message << "\n";
  }
  if (report.passed && !report.passed->empty()) {
    out << "  passed:";
    for (const auto& rule : *report.passed) out << " " << rule;
    out << "\n";
  }
  // The path once, before the verdict (which stays the last line).
  if (std::any_of(report.findings.begin(), report.findings.end(), cites_a_section))
    out << "sections cited refer to " << contract_doc_path().string() << "\n";
  out << (report.errors() == 0 ? "PASS" : "FAIL") << ": " << count_text(report.errors(), "error") << ", "
      << count_text(report.warnings(), "warning") << "\n";
  return out.str();
}

json finding_json(const Finding& f) {
  json j = {{"rule", f.rule},
            {"section", null_if_empty(f.section)},
            {"severity", severity_name(f.severity)},
            {"message", f.message}};
  if (f.subject) {
    j["kind"] = f.subject->kind;
    j["node"] = null_if_empty(f.subject->name);
    j["op"] = null_if_empty(f.subject->op);
  }
  return j;
}

json report_json(const Report& report) {
  json findings = json::array();
  for (const Finding& f : report.findings) findings.push_back(finding_json(f));
  json j = {{"file", report.file},       {"ok", report.errors() == 0},
            {"errors", report.errors()}, {"warnings", report.warnings()},
            {"findings", findings},      {"contract_doc", contract_doc_path().string()}};
  if (report.passed) j["passed"] = *report.passed;
  if (!report.derived.is_null()) j["derived"] = report.derived;
  return j;
}

}  // namespace llm2hef::core::rules
