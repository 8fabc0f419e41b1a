// Rules that judge a graph against the manifest.json `export` wrote with it
// (they run only when a manifest is given, as `export` does on what it
// wrote): onnx's own checker, the six runtime inputs in the manifest's order
// and shapes, and the single last-position logits output.
#include <onnx/checker.h>

#include "../lint_context.hpp"

namespace llm2hef::core::lint {

namespace {
// Declared dims, -1 for each one that is not a fixed value.
std::vector<int64_t> declared_dims(const onnx::ValueInfoProto& vi) {
  std::vector<int64_t> dims;
  for (const auto& d : vi.type().tensor_type().shape().dim()) dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return dims;
}
}  // namespace

void onnx_checker(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  try {
    if (c.source().empty())
      onnx::checker::check_model(c.model());
    else
      onnx::checker::check_model(c.source().string());
  } catch (const std::exception& e) {
    out.fail(std::string("onnx checker: ") + e.what());
  }
}

void manifest_inputs(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const std::vector<ManifestInput>& expected = c.manifest()->inputs;
  const auto& g = c.graph();
  if (static_cast<size_t>(g.input_size()) != expected.size()) {
    out.fail(std::to_string(g.input_size()) + " inputs; the manifest lists " + std::to_string(expected.size()));
    return;
  }
  for (int i = 0; i < g.input_size(); ++i) {
    const ManifestInput& want = expected[static_cast<size_t>(i)];
    const std::string& name = want.name;
    if (g.input(i).name() != name) {
      out.fail("input " + std::to_string(i + 1) + " is '" + g.input(i).name() + "', the manifest expects '" + name +
               "' (the DFC numbers input_layer1..N in ONNX input order)");
      continue;
    }
    const std::vector<int64_t>& shape = want.shape;
    if (declared_dims(g.input(i)) != shape)
      out.fail("input '" + name + "' is declared " + dims_detail(g.input(i).type()) + ", the manifest says " +
               shape_text(Shape{true, shape}));
  }
}

void manifest_output(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& g = c.graph();
  if (g.output_size() != 1 || g.output(0).name() != "logits") {
    out.fail("expected one output 'logits', the graph has " + std::to_string(g.output_size()) +
             (g.output_size() ? " (the first is '" + g.output(0).name() + "')" : std::string()));
    return;
  }
  const int64_t vocab = c.manifest()->dims.vocab;
  const std::vector<int64_t> want = {1, 1, vocab};
  if (declared_dims(g.output(0)) != want)
    out.fail("logits is declared " + dims_detail(g.output(0).type()) + "; the manifest's vocabulary makes it " +
             shape_text(Shape{true, want}) + " (the last position only)");
}

}  // namespace llm2hef::core::lint
