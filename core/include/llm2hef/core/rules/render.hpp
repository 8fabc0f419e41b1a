// A checker's report as the CLI prints it, the same layout for lint and hef
// check: text for people, JSON for scripts.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/rules/finding.hpp"

namespace llm2hef::core::rules {

// The file, then one line per finding (`  error [rule, section N] SUBJECT:
// message`, the subject only when the finding has one), the rules that
// passed (when the report lists them), (when a finding cites a section) the
// path of the hailo-contract.md the sections refer to (contract_doc_path()),
// and last the verdict (`PASS: 0 errors, 1 warning` or `FAIL: ...`).
std::string report_text(const Report& report);

// {"rule", "section" (null when none), "severity", "message"}, and for a
// finding about a part of the file {"kind", "node" (its name, null when
// none), "op" (null when none)}.
nlohmann::json finding_json(const Finding& finding);

// {"file", "ok" (no errors), "errors", "warnings", "findings",
// "contract_doc"}, and "passed" and "derived" for a checker that has them.
nlohmann::json report_json(const Report& report);

}  // namespace llm2hef::core::rules
