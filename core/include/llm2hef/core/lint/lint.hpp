// `llm2hef lint`: checks any ONNX graph against the Hailo-10H graph contract
// (hailo-contract.md sections 2-3, docs/lint.md "The graph contract") without
// loading its external data, so a multi-GB model lints in well under a second.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace llm2hef::core {

enum class LintSeverity { error, warning };

// What a finding points at.
enum class LintSubject { model, input, output, node };

struct LintFinding {
  std::string rule;        // e.g. "expand", see lint_rules()
  LintSeverity severity = LintSeverity::error;
  LintSubject subject = LintSubject::node;
  std::string name;        // node name (its first output when unnamed), input or output name; empty for the model
  std::string op;          // op type for nodes ("com.example:Foo" outside the default domain); empty otherwise
  std::string message;
  std::string section;     // the contract it cites, e.g. "hailo-contract.md §2"
};

struct LintReport {
  std::string file;
  std::vector<LintFinding> findings;
  size_t errors() const;
  size_t warnings() const;
};

struct LintRule {
  const char* id;
  LintSubject subject;  // what its findings point at
  LintSeverity severity;
  const char* section;
  const char* summary;
  bool needs_manifest = false;  // runs only on what `export` wrote, against its manifest.json
};

// Every rule lint implements, in the order it runs (one entry per subject a
// rule judges: dynamic-shape has three).
const std::vector<LintRule>& lint_rules();

// Lints one .onnx file. Throws BadInput when the file cannot be read or is not an ONNX model.
LintReport lint_onnx_file(const std::filesystem::path& path);

// Lints a serialized ModelProto held in memory; `label` is used as the report's file name.
LintReport lint_onnx_bytes(const std::string& bytes, const std::string& label);

// Lints a model.onnx `export` wrote (in its staging folder): every rule,
// plus those that judge the graph against the manifest written with it.
LintReport lint_exported_onnx(const std::filesystem::path& path, const nlohmann::json& manifest);

// One line per finding (`error [rule] node 'NAME' (Op): message (section)`),
// then (when there are findings) the path of the hailo-contract.md their
// sections refer to (contract_doc_path()), then the summary line.
std::string lint_text(const LintReport& report);

// The report as `lint --json` prints it: {"file", "ok" (no errors),
// "findings": [{"rule", "severity", "node", "op", "kind", "message",
// "section"}], "errors", "warnings", "contract_doc"}.
nlohmann::json lint_json(const LintReport& report);

}  // namespace llm2hef::core
