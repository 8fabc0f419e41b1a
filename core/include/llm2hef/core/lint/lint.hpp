// `llm2hef lint`: checks any ONNX graph against the Hailo-10H graph contract
// (hailo-contract.md sections 2-3, docs/lint.md "The graph contract") without
// loading its external data, so a multi-GB model lints in well under a second.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/core/rules/finding.hpp"

namespace llm2hef::core {

// A rule as `lint --help` lists it.
struct LintRuleSummary {
  const char* id;
  rules::Severity severity;
  const char* summary;
  bool needs_manifest = false;  // runs only on what `export` wrote, against its manifest.json
};

// Every rule lint implements, in the order it runs (one entry per subject a
// rule judges: dynamic-shape has three).
const std::vector<LintRuleSummary>& lint_rules();

// The lint functions return the shared report (rules/finding.hpp; printed by
// rules::report_text and rules::report_json, as hef check's is). Each
// finding's subject is what it is about: a "node" (named by its first output
// when unnamed; its op "domain:Op" outside the default domain), an "input",
// an "output", or the "model". A finding cites no section when it is about
// ONNX IR itself (an undefined tensor, a cycle, external data outside the
// model's folder) rather than the contract.

// Lints one .onnx file. Throws BadInput when the file cannot be read or is not an ONNX model.
rules::Report lint_onnx_file(const std::filesystem::path& path);

// Lints a serialized ModelProto held in memory; `label` is used as the report's file name.
rules::Report lint_onnx_bytes(const std::string& bytes, const std::string& label);

// Lints a model.onnx `export` wrote (in its staging folder): every rule,
// plus those that judge the graph against the manifest written with it.
rules::Report lint_exported_onnx(const std::filesystem::path& path, const ExportManifest& manifest);

}  // namespace llm2hef::core
