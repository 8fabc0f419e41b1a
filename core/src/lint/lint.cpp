// llm2hef lint: the graph contract (docs/lint.md) checked on any ONNX file, as
// a table of rules (one function each, in core/src/lint/rules/).
//
// The model is parsed with protobuf only: external data is never opened, so
// the cost is proportional to model.onnx, not to the weights. onnx shape
// inference fills in value shapes the file does not record.
#include "llm2hef/core/lint/lint.hpp"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "lint_context.hpp"
#include "llm2hef/core/io/contract_doc.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

onnx::ModelProto parse_model(const std::string& bytes, const std::string& label) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw BadInput(label + ": larger than protobuf's 2 GiB limit; save the weights as ONNX external data");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw BadInput(label + ": not an ONNX model (protobuf parse failed)");
  if (!model.has_graph() || (model.ir_version() <= 0 && model.opset_import_size() == 0))
    throw BadInput(label + ": not an ONNX model (no graph)");
  return model;
}

}  // namespace

size_t LintReport::errors() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(),
                                           [](const LintFinding& f) { return f.severity == LintSeverity::error; }));
}

size_t LintReport::warnings() const { return findings.size() - errors(); }

namespace {

enum class Scope { model, input, node, output };

struct Row {
  Scope scope;
  LintRule rule;
  lint::LintCheck check;
};

constexpr const char* kS2 = "hailo-contract.md §2";
constexpr const char* kS3 = "hailo-contract.md §3";
constexpr const char* kContract = "graph contract (docs/lint.md), hailo-contract.md §2";
constexpr const char* kOnnx = "ONNX IR: defined, acyclic, self-contained";

constexpr LintSeverity E = LintSeverity::error, W = LintSeverity::warning;
constexpr LintSubject M = LintSubject::model, I = LintSubject::input, N = LintSubject::node, O = LintSubject::output;
constexpr bool kWithManifest = true;

// Every rule, in the order it runs: model rules, then each runtime input's,
// then each node's, then each output's. A rule that judges several subjects
// has one row per subject (dynamic-shape: inputs cite §3).
const std::vector<Row> kRules = {
    {Scope::model, {"onnx-checker", M, E, kOnnx, "what onnx's own checker refuses", kWithManifest}, lint::onnx_checker},
    {Scope::model,
     {"manifest-inputs", M, E, kS2, "the runtime inputs are not the manifest's, in its order and shapes", kWithManifest},
     lint::manifest_inputs},
    {Scope::model, {"manifest-output", M, E, kS2, "the output is not one 'logits' [1, 1, vocab]", kWithManifest},
     lint::manifest_output},
    {Scope::model, {"missing-tensor", N, E, kOnnx, "a node input that no graph input, initializer or node defines"},
     lint::missing_tensor},
    {Scope::model, {"graph-cycle", N, E, kOnnx, "nodes that depend on each other in a cycle"}, lint::graph_cycle},
    {Scope::model,
     {"external-data-location", M, E, kOnnx, "an initializer whose external data is at an absolute path or under '..'"},
     lint::external_data_location},
    {Scope::model, {"shape-inference", M, W, kS2, "onnx shape inference failed on the graph"}, lint::shape_inference},
    {Scope::model, {"opset", M, W, kS2, "default-domain opset other than 17"}, lint::opset_17},
    {Scope::input, {"dynamic-shape", I, E, kS3, "an input with a symbolic/unknown dimension or unknown rank"},
     lint::input_static},
    {Scope::input, {"batch", I, E, kS2, "an input with batch > 1"}, lint::input_batch},
    {Scope::input, {"input-format", I, W, kS3, "a rank-4 (or rank other than 3) input needs net_input_format (given by compile.py "
                                           "when export's manifest.json names it)"},
     lint::input_format},
    {Scope::input, {"unconsumed-input", I, E, kS2, "a graph input no node consumes"}, lint::input_consumed},
    {Scope::node, {"dynamic-shape", N, E, kS2, "a node whose inputs are static but an output is not"},
     lint::node_static},
    {Scope::node, {"expand", N, E, kS2, "an Expand node (GQA must be a constant 0/1 matmul)"}, lint::no_expand},
    {Scope::node,
     {"reshape-transpose", N, E, kS2, "a head-split Reshape (rank 3 -> 4) not consumed by exactly one Transpose"},
     lint::reshape_transpose},
    {Scope::node, {"gather-on-activation", N, E, kS2, "Gather/GatherElements/GatherND on a non-constant tensor"},
     lint::gather_on_activation},
    {Scope::node,
     {"position-mixing", N, E, kContract,
      "an op mixing positions outside the attention matmuls (reduce/softmax/cumsum/conv/pool over SEQ, "
      "non-attention activation x activation MatMul, constant x activation MatMul over SEQ)"},
     lint::position_mixing},
    {Scope::node, {"unknown-op", N, W, kS2, "an op outside the patterns the DFC is known to parse"}, lint::known_op},
    {Scope::output, {"dynamic-shape", O, E, kS2, "an output with a symbolic/unknown dimension"}, lint::output_static},
    {Scope::output, {"output-not-last-position", O, E, kS2, "a graph output that is not [1, 1, N]"},
     lint::output_last_position},
};

LintReport run_rules(const lint::LintContext& c, std::string file) {
  LintReport report;
  report.file = std::move(file);
  std::unordered_set<std::string> error_nodes;  // nodes an error finding names: unknown-op stays silent on them
  auto run = [&](Scope scope, const lint::LintItem& item) {
    for (const Row& row : kRules) {
      if (row.scope != scope || (row.rule.needs_manifest && !c.manifest())) continue;
      lint::LintOut out(report, error_nodes, row.rule, item);
      row.check(c, item, out);
    }
  };
  const auto& g = c.graph();
  run(Scope::model, {});
  for (const auto& vi : g.input())
    if (!c.is_initializer(vi.name())) run(Scope::input, {&vi, nullptr, -1});  // an initializer with a default is no runtime input
  for (int i = 0; i < g.node_size(); ++i) run(Scope::node, {nullptr, &g.node(i), i});
  for (const auto& vi : g.output()) run(Scope::output, {&vi, nullptr, -1});
  return report;
}

// protobuf cannot parse a message over 2 GiB: weights must be external.
std::string read_onnx_file(const std::filesystem::path& path) {
  constexpr uint64_t kMaxOnnxBytes = (uint64_t{1} << 31) - 1;
  const RegularFile file(path);
  if (file.size() > kMaxOnnxBytes)
    throw BadInput(path.string() + ": " + std::to_string(file.size()) +
                   " bytes; an ONNX protobuf cannot exceed 2 GiB (keep the weights as external data)");
  return file.read_all(kMaxOnnxBytes);
}

}  // namespace

const std::vector<LintRule>& lint_rules() {
  static const std::vector<LintRule> rules = [] {
    std::vector<LintRule> out;
    for (const Row& row : kRules) out.push_back(row.rule);
    return out;
  }();
  return rules;
}

LintReport lint_onnx_bytes(const std::string& bytes, const std::string& label) {
  return run_rules(lint::LintContext(parse_model(bytes, label), {}, nullptr), label);
}

LintReport lint_onnx_file(const std::filesystem::path& path) {
  const std::string bytes = read_onnx_file(path);
  return run_rules(lint::LintContext(parse_model(bytes, path.string()), path, nullptr), path.string());
}

LintReport lint_exported_onnx(const std::filesystem::path& path, const nlohmann::json& manifest) {
  const std::string bytes = read_onnx_file(path);
  return run_rules(lint::LintContext(parse_model(bytes, path.string()), path, &manifest), path.string());
}

std::string lint_text(const LintReport& report) {
  std::ostringstream out;
  for (const auto& f : report.findings) {
    out << (f.severity == LintSeverity::error ? "error" : "warning") << " [" << f.rule << "] ";
    switch (f.subject) {
      case LintSubject::model: out << "model"; break;
      case LintSubject::input: out << "input '" << f.name << "'"; break;
      case LintSubject::output: out << "output '" << f.name << "'"; break;
      case LintSubject::node: out << "node '" << f.name << "' (" << f.op << ")"; break;
    }
    out << ": " << f.message << " (" << f.section << ")\n";
  }
  // The path once, before the verdict (which stays the last line).
  if (!report.findings.empty()) out << "sections cited refer to " << contract_doc_path().string() << "\n";
  const size_t e = report.errors(), w = report.warnings();
  out << report.file << ": " << e << (e == 1 ? " error, " : " errors, ") << w << (w == 1 ? " warning" : " warnings");
  if (e == 0) out << " - passes the graph contract";
  out << "\n";
  return out.str();
}

nlohmann::json lint_json(const LintReport& report) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : report.findings) {
    const char* kind = "node";
    switch (f.subject) {
      case LintSubject::model: kind = "model"; break;
      case LintSubject::input: kind = "input"; break;
      case LintSubject::output: kind = "output"; break;
      case LintSubject::node: kind = "node"; break;
    }
    findings.push_back({{"rule", f.rule},
                        {"severity", f.severity == LintSeverity::error ? "error" : "warning"},
                        {"node", f.name.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.name)},
                        {"op", f.op.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.op)},
                        {"kind", kind},
                        {"message", f.message},
                        {"section", f.section}});
  }
  return {{"file", report.file},
          {"ok", report.errors() == 0},
          {"findings", findings},
          {"errors", report.errors()},
          {"warnings", report.warnings()},
          {"contract_doc", contract_doc_path().string()}};
}

}  // namespace llm2hef::core
