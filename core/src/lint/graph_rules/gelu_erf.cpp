// Erf only inside the exact GELU torch's TorchScript exporter writes for
// F.gelu (approximate="none"), at opset 17 as export uses:
//
//   Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)
//
// Why (docs/lint.md, rule `erf-outside-gelu`, gives the sources): a public
// DFC parse of a Keras GELU, the same function spelled with 0.5 multiplied
// into x first and Add(1, erf), stopped at its Erf
// ("UnsupportedActivationLayerError ... Gelu/Erf: Unexpected activation"), and
// no public parse of an Erf anywhere else is known; Hailo's model zoo compiles
// for Hailo-10H networks whose torch source uses the exact GELU (timm's
// vit_tiny, exported at opset 17), which torch's exporter writes as above. So
// the spelling is checked operand by operand, in torch's operand order.
#include <cmath>
#include <numbers>

#include "../lint_context.hpp"

namespace llm2hef::core::lint {

namespace {

constexpr const char* kTorchGelu = "Div(x, 1.4142135) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)";

// `name`'s single consumer when it has exactly one and is no graph output.
const onnx::NodeProto* only_consumer(const LintContext& c, const std::string& name) {
  const auto users = c.consumers(name);
  if (users.size() != 1 || c.is_graph_output(name)) return nullptr;
  return users[0];
}

bool is_op(const onnx::NodeProto* n, const char* op, int inputs) {
  return n && default_domain(*n) && n->op_type() == op && n->input_size() == inputs && n->output_size() >= 1;
}

bool const_equals(const LintContext& c, const std::string& name, double want, double tolerance) {
  const auto v = c.const_scalar(name);
  return v && std::fabs(*v - want) <= tolerance;
}

std::string consumers_text(const LintContext& c, const std::string& name) {
  std::vector<std::string> names;
  for (const auto* u : c.consumers(name)) names.push_back("'" + node_label(*u, -1) + "' (" + op_label(*u) + ")");
  if (c.is_graph_output(name)) names.push_back("the graph output");
  return names.empty() ? std::string("nothing") : join(names);
}

// Empty when `erf` is the Erf of torch's exact GELU; else what differs.
std::string gelu_mismatch(const LintContext& c, const onnx::NodeProto& erf) {
  if (erf.input_size() != 1 || erf.output_size() != 1) return "it does not have one input and one output";
  // float32(sqrt 2) is 2.4e-8 from sqrt 2: torch writes it as a double and onnx stores it as a float.
  const onnx::NodeProto* div = c.producer(erf.input(0));
  if (!is_op(div, "Div", 2) || div->output(0) != erf.input(0))
    return "its input '" + erf.input(0) + "' is not Div(x, 1.4142135)" +
           (div ? " but comes from '" + node_label(*div, -1) + "' (" + op_label(*div) + ")" : std::string());
  const std::string& x = div->input(0);
  if (!const_equals(c, div->input(1), std::numbers::sqrt2, 1e-7))
    return "the Div before it, '" + node_label(*div, -1) + "', divides by '" + div->input(1) +
           "', not by a constant sqrt(2) = 1.4142135";
  if (c.is_const(x)) return "the Div before it divides the constant '" + x + "', not an activation";
  if (only_consumer(c, div->output(0)) != &erf)
    return "the Div's output '" + div->output(0) + "' also feeds " + consumers_text(c, div->output(0));
  const onnx::NodeProto* add = only_consumer(c, erf.output(0));
  if (!is_op(add, "Add", 2) || add->input(0) != erf.output(0) || !const_equals(c, add->input(1), 1.0, 0.0))
    return "its output '" + erf.output(0) + "' feeds " + consumers_text(c, erf.output(0)) +
           ", not exactly one Add(erf, 1) with the Erf first";
  const onnx::NodeProto* mul = only_consumer(c, add->output(0));
  if (!is_op(mul, "Mul", 2) || mul->input(0) != x || mul->input(1) != add->output(0))
    return "the Add's output '" + add->output(0) + "' feeds " + consumers_text(c, add->output(0)) +
           ", not exactly one Mul(x, erf + 1) with x = '" + x + "' (the Div's input) first";
  const onnx::NodeProto* half = only_consumer(c, mul->output(0));
  if (!is_op(half, "Mul", 2) || half->input(0) != mul->output(0) || !const_equals(c, half->input(1), 0.5, 0.0))
    return "the product '" + mul->output(0) + "' feeds " + consumers_text(c, mul->output(0)) +
           ", not exactly one Mul(x * (erf + 1), 0.5) with the product first";
  return {};
}

}  // namespace

void erf_outside_gelu(const LintItem& item, rules::RuleOut& out) {
  const auto& n = *item.node;
  if (!default_domain(n) || n.op_type() != "Erf") return;
  const std::string why = gelu_mismatch(item.context, n);
  if (why.empty()) return;
  out.fail("Erf outside the exact GELU torch exports (" + std::string(kTorchGelu) + "): " + why +
           ". The DFC parses Erf only as part of that GELU (a Keras-spelled GELU failed with "
           "\"UnsupportedActivationLayerError: Unexpected activation\" at its Erf); write the GELU in torch's "
           "spelling, or use the tanh or sigmoid form");
}

}  // namespace llm2hef::core::lint
