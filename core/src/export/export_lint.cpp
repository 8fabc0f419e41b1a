// The graph `export` wrote, judged by `llm2hef lint`'s rules (plus those
// that compare it with the manifest) while it is still in the staging
// folder: a graph our own export writes must pass, so an error finding is a
// bug of llm2hef (exit 5), named by its rule; nothing is published.
#include "llm2hef/core/export/export_pipeline.hpp"
#include "llm2hef/core/lint/lint.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

void check_graph_contract(const std::filesystem::path& model_path, const ExportManifest& manifest) {
  const rules::Report report = lint_exported_onnx(model_path, manifest);
  if (report.errors() == 0) return;
  std::string failed;
  for (const auto& f : report.findings)
    if (f.severity == rules::Severity::error)
      failed += "\n  " + rules::finding_tag(f) + " " +
                (f.subject && !f.subject->name.empty() ? f.subject->name + ": " : std::string()) + f.message;
  throw InternalError(model_path.string() + ": the exported graph breaks lint rule(s):" + failed);
}

}  // namespace llm2hef::core
