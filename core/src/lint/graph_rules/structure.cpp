// Rules on the model as a whole: what onnx's own checker would refuse, or
// what would break the DFC before any Hailo rule applies (tensors nobody
// defines, cycles, external data outside the model's folder), then the
// opset and shape inference.
#include <unordered_map>

#include "../lint_context.hpp"

namespace llm2hef::core::lint {

namespace {
std::unordered_map<std::string, int> producers(const onnx::GraphProto& g) {
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output())
      if (!out.empty()) producer[out] = i;
  return producer;
}
}  // namespace

void missing_tensor(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& g = c.graph();
  const auto producer = producers(g);
  std::unordered_set<std::string> defined;
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& vi : g.input()) defined.insert(vi.name());
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input())
      if (!in.empty() && !defined.count(in) && !producer.count(in))
        out.fail_about(node_subject(g.node(i), i),
                       "input '" + in + "' is not a graph input, an initializer or any node's output");
}

void graph_cycle(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  const auto& g = c.graph();
  const auto producer = producers(g);
  // Kahn's algorithm over tensor dependencies: nodes left over lie on a cycle.
  std::vector<int> pending(static_cast<size_t>(g.node_size()), 0);
  std::unordered_map<int, std::vector<int>> successors;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input())
      if (auto it = producer.find(in); !in.empty() && it != producer.end()) {
        ++pending[static_cast<size_t>(i)];
        successors[it->second].push_back(i);
      }
  std::vector<int> ready;
  for (int i = 0; i < g.node_size(); ++i)
    if (pending[static_cast<size_t>(i)] == 0) ready.push_back(i);
  size_t sorted = 0;
  while (!ready.empty()) {
    const int i = ready.back();
    ready.pop_back();
    ++sorted;
    for (int j : successors[i])
      if (--pending[static_cast<size_t>(j)] == 0) ready.push_back(j);
  }
  if (sorted < static_cast<size_t>(g.node_size()))
    for (int i = 0; i < g.node_size(); ++i)
      if (pending[static_cast<size_t>(i)] > 0) {
        out.fail_about(node_subject(g.node(i), i), "lies on a cycle (" +
                                                       std::to_string(static_cast<size_t>(g.node_size()) - sorted) +
                                                       " nodes never become ready); an ONNX graph must be acyclic");
        break;
      }
}

void external_data_location(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  for (const auto& t : c.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (const auto& entry : t.external_data()) {
      if (entry.key() != "location") continue;
      const std::filesystem::path loc(entry.value());
      bool escapes = loc.is_absolute() || loc.empty();
      for (const auto& part : loc) escapes = escapes || part == "..";
      if (escapes)
        out.fail("initializer '" + t.name() + "' keeps its data at '" + entry.value() +
                 "', outside the model's folder (absolute or '..'); onnx 1.12 would follow it");
    }
  }
}

void shape_inference(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  if (c.inference_failure().empty()) return;
  std::string what;
  for (char ch : c.inference_failure()) what += (ch == '\n' || ch == '\r') ? ' ' : ch;
  while (!what.empty() && what.back() == ' ') what.pop_back();
  if (what.size() > 400) what = what.substr(0, 400) + "...";
  out.fail("onnx shape inference failed (" + what +
           "); the DFC runs it too, and shapes lint could not infer are treated as unknown");
}

void opset_17(const LintItem& item, rules::RuleOut& out) {
  const LintContext& c = item.context;
  if (c.opset() != 17)
    out.fail("default-domain opset " + std::to_string(c.opset()) +
             "; the formulation proven with the DFC is opset 17 (other opsets are unproven)");
}

}  // namespace llm2hef::core::lint
