// Rules on each node: static shapes where they originate, the ops the DFC
// parser refuses, and ops outside the patterns it is known to accept.
#include <map>
#include <set>

#include "../lint_context.hpp"

namespace llm2hef::core::lint {

namespace {

// Ops the DFC parser has been seen to accept in the proven formulation
// (hailo-contract.md §2 "Op patterns"), plus trivially safe ones.
// What torch's TorchScript exporter writes for the parsed formulation (§2 "Op
// patterns"): rsqrt is Sqrt then Div(1, .), so Reciprocal is not here;
// LayerNormalization is torch's opset-17 spelling of nn.LayerNorm (GPT-2 in
// SEED's run, docs/gpt2.md). Erf is known only inside torch's exact GELU,
// which the rule erf-outside-gelu (gelu_erf.cpp) checks on every Erf.
const std::set<std::string> kKnownOps = {"MatMul",     "Add",       "Sub",      "Mul",
                                         "Div",        "Pow",       "Sqrt",     "LayerNormalization",
                                         "ReduceMean", "Sigmoid",   "Tanh",     "Softmax",
                                         "Reshape",    "Transpose", "Slice",    "Concat",
                                         "Split",      "Neg",       "Identity", "Constant",
                                         "Relu",       "Erf"};
// Spellings of a known computation that torch writes otherwise: the hint names torch's.
const std::map<std::string, std::string> kTorchSpelling = {
    {"Reciprocal", "torch writes rsqrt as Sqrt then Div with a constant 1, and 1/x as Div"},
};

const std::set<std::string> kGatherOps = {"Gather", "GatherElements", "GatherND"};

}  // namespace

// Dynamic shapes are reported where they originate: a node whose inputs are static but an output is not.
void node_static(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& n = *item.node;
  for (const auto& in : n.input()) {
    if (in.empty() || c.is_nontensor(in)) continue;
    if (!c.shape(in).is_static()) return;  // a consequence of something upstream
  }
  for (const auto& o : n.output()) {
    if (o.empty() || c.is_nontensor(o) || c.is_graph_output(o)) continue;
    Shape s = c.shape(o);
    if (s.is_static()) continue;
    out.fail("output '" + o + "' has shape " + shape_text(s) +
             (s.known ? "" : ": onnx shape inference could not infer it") + "; the DFC needs static shapes throughout");
    return;
  }
}

void no_expand(const LintItem& item, rules::RuleOut& out) {
  if (default_domain(*item.node) && item.node->op_type() == "Expand")
    out.fail(
        "Expand is not parsable (SEED round 1); expand GQA k/v with a constant 0/1 "
        "(NKVHEAD*HD) x (NHEAD*HD) matmul in repeat_interleave order");
}

void reshape_transpose(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& n = *item.node;
  if (!default_domain(n) || n.op_type() != "Reshape") return;
  if (n.output_size() == 0 || n.input_size() < 1) return;
  const std::string& result = n.output(0);
  Shape os = c.shape(result);
  int64_t out_rank = os.known ? os.rank() : -1;
  if (out_rank < 0 && n.input_size() > 1)
    if (auto target = c.const_ints(n.input(1))) out_rank = static_cast<int64_t>(target->size());
  if (out_rank != 4) return;
  Shape is = c.shape(n.input(0));
  if (is.known && is.rank() != 3) return;
  // A head split keeps [b, s] and splits the last axis into [heads, hd].
  if (is.is_static() && os.is_static() &&
      (os.dims[0] != is.dims[0] || os.dims[1] != is.dims[1] || os.dims[2] * os.dims[3] != is.dims[2]))
    return;
  const auto users = c.consumers(result);
  const bool ok = users.size() == 1 && users[0]->op_type() == "Transpose" && default_domain(*users[0]) &&
                  !c.is_graph_output(result);
  if (ok) return;
  std::vector<std::string> names;
  for (const auto* u : users) names.push_back("'" + node_label(*u, -1) + "' (" + op_label(*u) + ")");
  if (c.is_graph_output(result)) names.push_back("the graph output");
  out.fail("head-split Reshape to " + shape_text(os) + " must feed exactly one Transpose, but feeds " +
           (names.empty() ? std::string("nothing") : join(names)) +
           "; nothing may sit between the head Reshape and its Transpose (SEED round 1: "
           "\"UnsupportedShuffleLayerError: Reshape\")");
}

void gather_on_activation(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& n = *item.node;
  if (default_domain(n) && kGatherOps.count(n.op_type()) && n.input_size() > 0 && !c.is_const(n.input(0)))
    out.fail(n.op_type() + " on the activation '" + n.input(0) +
             "' is not parsable; embedding lookups belong to the host (the runtime reads "
             "embeddings.bin) and position picks should be Slice");
}

void known_op(const LintItem& item, rules::RuleOut& out) {
  const auto& n = *item.node;
  const bool std_op = default_domain(n);
  if (std_op && kKnownOps.count(n.op_type())) return;
  if (out.has_error_about(node_subject(n, item.index))) return;  // one error on a node says enough
  out.fail(op_label(n) +
           " is outside the op patterns the DFC parser is known to accept; a graph built this way is "
           "unproven against the DFC" +
           (std_op && kTorchSpelling.count(n.op_type()) ? " (" + kTorchSpelling.at(n.op_type()) + ")" : std::string()));
}

}  // namespace llm2hef::core::lint
