// llm2hef lint: the graph contract (docs/lint.md) checked on any ONNX file, as
// a table of rules (one function each, in core/src/lint/graph_rules/).
//
// The model is parsed with protobuf only: external data is never opened, so
// the cost is proportional to model.onnx, not to the weights. onnx shape
// inference fills in value shapes the file does not record.
#include "llm2hef/core/lint/lint.hpp"

#include <onnx/onnx_pb.h>

#include "lint_context.hpp"
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

using rules::Rule;
using rules::Severity;

enum class Scope { model, input, node, output };

// A row of the table: the rule, what it runs on, and what `lint --help` says of it.
struct Row {
  Scope scope;
  Rule<lint::LintItem> rule;
  const char* summary;
  bool needs_manifest = false;
};

constexpr bool kWithManifest = true;

// Every rule, in the order it runs: model rules, then each runtime input's,
// then each node's, then each output's. A rule that judges several subjects
// has one row per subject (dynamic-shape: inputs cite §3). The rules of ONNX
// IR itself (defined, acyclic, self-contained) cite no section ("").
const std::vector<Row> kRules = {
    {Scope::model,
     {"onnx-checker", "", Severity::error, lint::onnx_checker},
     "what onnx's own checker refuses",
     kWithManifest},
    {Scope::model,
     {"manifest-inputs", "2", Severity::error, lint::manifest_inputs},
     "the runtime inputs are not the manifest's, in its order and shapes",
     kWithManifest},
    {Scope::model,
     {"manifest-output", "2", Severity::error, lint::manifest_output},
     "the output is not one 'logits' [1, 1, vocab]",
     kWithManifest},
    {Scope::model,
     {"missing-tensor", "", Severity::error, lint::missing_tensor},
     "a node input that no graph input, initializer or node defines"},
    {Scope::model,
     {"graph-cycle", "", Severity::error, lint::graph_cycle},
     "nodes that depend on each other in a cycle"},
    {Scope::model,
     {"external-data-location", "", Severity::error, lint::external_data_location},
     "an initializer whose external data is at an absolute path or under '..'"},
    {Scope::model,
     {"shape-inference", "2", Severity::warning, lint::shape_inference},
     "onnx shape inference failed on the graph"},
    {Scope::model, {"opset", "2", Severity::warning, lint::opset_17}, "default-domain opset other than 17"},
    {Scope::input,
     {"dynamic-shape", "3", Severity::error, lint::input_static},
     "an input with a symbolic/unknown dimension or unknown rank"},
    {Scope::input, {"batch", "2", Severity::error, lint::input_batch}, "an input with batch > 1"},
    {Scope::input,
     {"input-format", "3", Severity::warning, lint::input_format},
     "a rank-4 (or rank other than 3) input needs net_input_format (given by compile.py when export's "
     "manifest.json names it)"},
    {Scope::input, {"unconsumed-input", "2", Severity::error, lint::input_consumed}, "a graph input no node consumes"},
    {Scope::node,
     {"dynamic-shape", "2", Severity::error, lint::node_static},
     "a node whose inputs are static but an output is not"},
    {Scope::node,
     {"expand", "2", Severity::error, lint::no_expand},
     "an Expand node (GQA must be a constant 0/1 matmul)"},
    {Scope::node,
     {"reshape-transpose", "2", Severity::error, lint::reshape_transpose},
     "a head-split Reshape (rank 3 -> 4) not consumed by exactly one Transpose"},
    {Scope::node,
     {"gather-on-activation", "2", Severity::error, lint::gather_on_activation},
     "Gather/GatherElements/GatherND on a non-constant tensor"},
    // Its messages name the graph contract (docs/lint.md) it enforces.
    {Scope::node,
     {"position-mixing", "2", Severity::error, lint::position_mixing},
     "an op mixing positions outside the attention matmuls (reduce/softmax/cumsum/conv/pool over SEQ, "
     "non-attention activation x activation MatMul, constant x activation MatMul over SEQ)"},
    // Before unknown-op, which accepts Erf as an op: this rule judges where it stands.
    {Scope::node,
     {"erf-outside-gelu", "2", Severity::error, lint::erf_outside_gelu},
     "an Erf that is not inside torch's exact GELU (Div by sqrt 2, Erf, Add 1, Mul x, Mul 0.5)"},
    {Scope::node,
     {"unknown-op", "2", Severity::warning, lint::known_op},
     "an op outside the patterns the DFC is known to parse"},
    {Scope::output,
     {"dynamic-shape", "2", Severity::error, lint::output_static},
     "an output with a symbolic/unknown dimension"},
    {Scope::output,
     {"output-not-last-position", "2", Severity::error, lint::output_last_position},
     "a graph output that is not [1, 1, N]"},
};

rules::Report run_rules(const lint::LintContext& c, std::string file) {
  rules::Report report;
  report.file = std::move(file);
  rules::RuleRunner runner(report.findings);
  auto run = [&](Scope scope, const lint::LintItem& item, const rules::Subject& about) {
    for (const Row& row : kRules)
      if (row.scope == scope && (!row.needs_manifest || c.manifest())) runner.run(row.rule, item, about);
  };
  const auto& g = c.graph();
  run(Scope::model, {c}, {"model", "", ""});
  for (const auto& vi : g.input())
    if (!c.is_initializer(vi.name()))  // an initializer with a default is no runtime input
      run(Scope::input, {c, &vi}, {"input", vi.name(), ""});
  for (int i = 0; i < g.node_size(); ++i)
    run(Scope::node, {c, nullptr, &g.node(i), i}, lint::node_subject(g.node(i), i));
  for (const auto& vi : g.output()) run(Scope::output, {c, &vi}, {"output", vi.name(), ""});
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

const std::vector<LintRuleSummary>& lint_rules() {
  static const std::vector<LintRuleSummary> summaries = [] {
    std::vector<LintRuleSummary> out;
    for (const Row& row : kRules) out.push_back({row.rule.name, row.rule.severity, row.summary, row.needs_manifest});
    return out;
  }();
  return summaries;
}

rules::Report lint_onnx_bytes(const std::string& bytes, const std::string& label) {
  return run_rules(lint::LintContext(parse_model(bytes, label), {}, nullptr), label);
}

rules::Report lint_onnx_file(const std::filesystem::path& path) {
  const std::string bytes = read_onnx_file(path);
  return run_rules(lint::LintContext(parse_model(bytes, path.string()), path, nullptr), path.string());
}

rules::Report lint_exported_onnx(const std::filesystem::path& path, const ExportManifest& manifest) {
  const std::string bytes = read_onnx_file(path);
  return run_rules(lint::LintContext(parse_model(bytes, path.string()), path, &manifest), path.string());
}

}  // namespace llm2hef::core
