// Rules on each runtime input (graph inputs that are not initializers) and
// each graph output.
#include "../lint_context.hpp"

namespace llm2hef::core::lint {

void input_static(const LintItem& item, rules::RuleOut& out) {
  const auto& vi = *item.value;
  if (!shape_of(vi.type()).is_static())
    out.fail("input shape " + dims_detail(vi.type()) +
             " is not static; the DFC needs every input declared with a static shape in net_input_shapes "
             "(\"ValueError: Unspecified inputs\")");
}

void input_batch(const LintItem& item, rules::RuleOut& out) {
  const Shape s = shape_of(item.value->type());
  if (s.known && s.rank() >= 1 && s.dims[0] > 1)
    out.fail("batch " + std::to_string(s.dims[0]) + " in " + shape_text(s) + "; the contract is batch 1");
}

// Whether export's manifest gives the input a net_input_format of its rank:
// compile.py passes the manifest's dfc_format to the DFC's parse, so the
// format is handled for llm2hef's own export.
bool manifest_gives_format(const LintContext& c, const std::string& name, size_t rank) {
  const ExportManifest* m = c.manifest();
  if (!m) return false;
  for (const ManifestInput& input : m->inputs)
    if (input.name == name) return input.dfc_format.size() == rank;
  return false;
}

void input_format(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const Shape s = shape_of(item.value->type());
  if (s.known && manifest_gives_format(c, item.value->name(), static_cast<size_t>(s.rank()))) return;
  if (s.known && s.rank() == 4)
    out.fail("rank-4 input " + shape_text(s) + ": give net_input_format {'" + item.value->name() +
             "': [Dims.BATCH, Dims.HEIGHT, Dims.WIDTH, Dims.CHANNELS]} or the DFC reads it as NCHW and both "
             "real dims become spatial (rank-3 inputs take [Dims.BATCH, Dims.WIDTH, Dims.CHANNELS])");
  else if (s.known && s.rank() != 3)
    out.fail("rank-" + std::to_string(s.rank()) + " input " + shape_text(s) +
             ": net_input_format is documented only for rank 3 ([Dims.BATCH, Dims.WIDTH, Dims.CHANNELS]) and "
             "rank 4 ([Dims.BATCH, Dims.HEIGHT, Dims.WIDTH, Dims.CHANNELS])");
}

void input_consumed(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  if (!c.consumed_anywhere(item.value->name()))
    out.fail(
        "input is never consumed by a node; the runtime feeds all six inputs and the DFC numbers "
        "input_layer1..N in ONNX input order");
}

void output_static(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& vi = *item.value;
  if (!shape_of(vi.type()).is_static() && !c.shape(vi.name()).is_static())
    out.fail("output shape " + dims_detail(vi.type()) + " is not static");
}

void output_last_position(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const Shape s = c.shape(item.value->name());
  if (!s.known) return;
  if (s.rank() != 3)
    out.fail("output shape " + shape_text(s) +
             "; the contract is logits [1, 1, VOCAB]: final norm, slice of the last position, then lm_head");
  else if (s.dims[1] >= 0 && s.dims[1] != 1)
    out.fail("output shape " + shape_text(s) + " carries " + std::to_string(s.dims[1]) +
             " positions; slice the last position before lm_head (full-sequence logits made the lm_head "
             "unplaceable)");
}

}  // namespace llm2hef::core::lint
