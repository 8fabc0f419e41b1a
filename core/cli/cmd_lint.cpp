#include <nlohmann/json.hpp>

#include <iostream>

#include "commands.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/lint/lint.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef lint MODEL.onnx [--json]

Checks any ONNX graph (llm2hef's or your own export) against the Hailo-10H
graph contract (docs/lint.md; hailo-contract.md sections 2-3). Only the
protobuf is read: external weight data is never opened, so large models
lint in seconds. onnx shape inference fills in missing value shapes.

Rules (severity):
  dynamic-shape (error)           symbolic/unknown dims, unknown rank, unspecified inputs
  batch (error)                   an input with batch > 1
  unconsumed-input (error)        a graph input no node reads
  expand (error)                  any Expand node (GQA must be a constant 0/1 matmul)
  reshape-transpose (error)       an op between a head-split Reshape and its Transpose
  gather-on-activation (error)    Gather on a non-constant tensor
  position-mixing (error)         positions mixed outside the attention matmuls
  output-not-last-position (error) an output that is not [1, 1, N]
  input-format (warning)          rank-4 inputs need net_input_format (else NCHW)
  unknown-op (warning)            ops outside the patterns the DFC is known to parse
  opset (warning)                 an opset other than 17
  shape-inference (warning)       onnx shape inference failed

  --json    {"file", "findings": [{"rule", "severity", "node", "op", "kind",
            "message", "section"}], "errors", "warnings"} on stdout

Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage,
3 the file is missing or not an ONNX model.
)";
}  // namespace

void add_lint_command(CommandLine& cli) {
  struct Options {
    std::string model;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "lint", kHelp, [o](Invocation&) {
    const core::LintReport report = core::lint_onnx_file(o->model);
    if (o->json) {
      nlohmann::json findings = nlohmann::json::array();
      for (const auto& f : report.findings) {
        const char* kind = "node";
        switch (f.subject) {
          case core::LintSubject::model: kind = "model"; break;
          case core::LintSubject::input: kind = "input"; break;
          case core::LintSubject::output: kind = "output"; break;
          case core::LintSubject::node: kind = "node"; break;
        }
        findings.push_back({{"rule", f.rule},
                            {"severity", f.severity == core::LintSeverity::error ? "error" : "warning"},
                            {"node", f.name.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.name)},
                            {"op", f.op.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.op)},
                            {"kind", kind},
                            {"message", f.message},
                            {"section", f.section}});
      }
      nlohmann::json out = {{"file", report.file},
                            {"findings", findings},
                            {"errors", report.errors()},
                            {"warnings", report.warnings()}};
      std::cout << core::json_text(out, 2) << "\n";
    } else {
      std::cout << core::lint_text(report);
    }
    return report.errors() > 0 ? static_cast<int>(ExitCode::failure) : 0;
  });
  app->add_option("MODEL.onnx", o->model)->required();
  app->add_flag("--json", o->json);
}

}  // namespace llm2hef::cli
