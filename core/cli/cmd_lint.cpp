#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "llm2hef/core/io/json_text.hpp"
#include "llm2hef/core/lint/lint.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/core/rules/render.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

namespace {
constexpr const char* kHelp = R"(Usage: llm2hef lint MODEL.onnx [--json] [--no-manifest]

Checks any ONNX graph (llm2hef's or your own export) against the Hailo-10H
graph contract (docs/lint.md; hailo-contract.md sections 2-3). Only the
protobuf is read: external weight data is never opened, so large models
lint in seconds. onnx shape inference fills in missing value shapes.
Beside it, an llm2hef export's manifest.json that lists the file is read
too, as export reads it: the rules marked [on export's output only] run,
and an input whose net_input_format the manifest gives (compile.py passes
it to the DFC) is not warned about. --no-manifest: the graph alone.

@RULES@
{options}

Sections cited are those of hailo-contract.md, installed with llm2hef
(<prefix>/share/doc/llm2hef/); the text output names its path once.

Exit status: 0 no errors (warnings allowed), 1 errors found, 2 usage,
3 the file is missing or not an ONNX model.
)";
// The rules section of the help, from the rule table: one line per rule id
// (a rule that judges several subjects has one row per subject there).
std::string rules_help() {
  std::string out = "Rules (severity):\n";
  std::vector<std::string> seen;
  for (const core::LintRuleSummary& r : core::lint_rules()) {
    if (std::find(seen.begin(), seen.end(), r.id) != seen.end()) continue;
    seen.push_back(r.id);
    std::string head = std::string("  ") + r.id + " (" + core::rules::severity_name(r.severity) + ")";
    head.resize(std::max<size_t>(head.size() + 1, 34), ' ');
    out += head + r.summary + (r.needs_manifest ? " [on export's output only]" : "") + "\n";
  }
  return out + "\n";
}

// Built once; the command line keeps a pointer to it.
const char* help_text() {
  static const std::string help = [] {
    std::string text = kHelp;
    const std::string placeholder = "@RULES@\n";
    return text.replace(text.find(placeholder), placeholder.size(), rules_help());
  }();
  return help.c_str();
}

// With export's manifest.json beside the file (one that lists it), the
// graph is linted as export lints it; a manifest that cannot be read is
// named and the graph linted alone.
core::rules::Report lint_with_manifest_beside(const std::filesystem::path& model, bool use_manifest) {
  const std::filesystem::path manifest_path = model.parent_path() / "manifest.json";
  std::error_code ec;
  if (use_manifest && std::filesystem::is_regular_file(manifest_path, ec)) {
    try {
      const core::ExportManifest manifest = core::read_manifest(manifest_path);
      if (manifest.files.count(model.filename().string())) return core::lint_exported_onnx(model, manifest);
    } catch (const BadInput& e) {
      std::cerr << "note: " << manifest_path.string() << " not used (" << e.what() << "); the graph is linted alone\n";
    }
  }
  return core::lint_onnx_file(model);
}

}  // namespace

void add_lint_command(CommandLine& cli) {
  struct Options {
    std::string model;
    bool json = false, no_manifest = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* app = cli.add_command(cli.root(), "lint", help_text(), [o](Invocation&) {
    const core::rules::Report report = lint_with_manifest_beside(o->model, !o->no_manifest);
    if (o->json) {
      std::cout << core::json_text(core::rules::report_json(report), 2) << "\n";
    } else {
      std::cout << core::rules::report_text(report);
    }
    return report.errors() > 0 ? static_cast<int>(ExitCode::failure) : 0;
  });
  app->add_option("MODEL.onnx", o->model)->required();
  OptionRows& rows = cli.options(*app, 12);
  rows.add(app->add_flag("--json", o->json), "",
           "{\"file\", \"ok\", \"findings\": [{\"rule\", \"severity\", \"node\", \"op\",\n"
           "\"kind\", \"message\", \"section\"}], \"errors\", \"warnings\",\n"
           "\"contract_doc\"} on stdout; ok is true when there is no error");
  rows.add(app->add_flag("--no-manifest", o->no_manifest), "", "the graph alone: no manifest.json read beside it");
}

}  // namespace llm2hef::cli
