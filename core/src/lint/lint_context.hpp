// What the lint rules share (private to core/src/lint): the model with the
// shapes onnx inference adds, indexes built once over it, and what a rule
// runs on. Each rule is one function in core/src/lint/graph_rules/; the table in
// lint.cpp gives its name, section, severity and what it runs on.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../rules/rule_table.hpp"
#include "llm2hef/core/lint/lint.hpp"

namespace llm2hef::core::lint {

// A tensor shape as far as it is known: rank may be unknown; a dim < 0 is unknown or symbolic.
struct Shape {
  bool known = false;
  std::vector<int64_t> dims;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_static() const;
};

std::string shape_text(const Shape& s);
Shape shape_of(const onnx::TypeProto& t);
std::string dims_detail(const onnx::TypeProto& t);
std::string op_label(const onnx::NodeProto& n);
bool default_domain(const onnx::NodeProto& n);
std::string node_label(const onnx::NodeProto& n, int index);
// What a finding about this node points at: its label and op.
rules::Subject node_subject(const onnx::NodeProto& n, int index);
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
std::optional<int64_t> attr_int(const onnx::NodeProto& n, const std::string& name);
std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name);
int64_t normalize_axis(int64_t axis, int64_t rank);
std::string join(const std::vector<std::string>& items);

// The model and what several rules read, derived once.
class LintContext {
 public:
  // `source`: the file the model was read from (empty for bytes held in memory);
  // `manifest`: export's manifest.json, for the rules that check the graph against it.
  LintContext(onnx::ModelProto model, std::filesystem::path source, const ExportManifest* manifest);

  const onnx::ModelProto& model() const { return model_; }
  const onnx::GraphProto& graph() const { return model_.graph(); }
  const std::filesystem::path& source() const { return source_; }
  const ExportManifest* manifest() const { return manifest_; }
  int64_t opset() const { return opset_; }
  const std::string& inference_failure() const { return inference_failure_; }
  int64_t seq() const { return seq_; }  // the first input's dim 1 (inputs_embeds [1, SEQ, HIDDEN]); 0 unknown

  Shape shape(const std::string& name) const;
  bool is_const(const std::string& name) const { return constants_.count(name) > 0; }
  bool is_initializer(const std::string& name) const { return initializers_.count(name) > 0; }
  bool is_nontensor(const std::string& name) const { return nontensor_.count(name) > 0; }
  bool is_graph_output(const std::string& name) const { return graph_outputs_.count(name) > 0; }
  bool consumed_anywhere(const std::string& name) const { return consumed_anywhere_.count(name) > 0; }
  std::vector<const onnx::NodeProto*> consumers(const std::string& name) const;
  std::optional<std::vector<int64_t>> const_ints(const std::string& name) const;
  // The value of a one-element float or double constant held in the file; nullopt otherwise.
  std::optional<double> const_scalar(const std::string& name) const;
  // The node that writes `name`; nullptr for graph inputs, initializers and unknown names.
  const onnx::NodeProto* producer(const std::string& name) const;
  // True when `axis` (normalized) of a tensor shaped `s` is its sequence axis.
  bool is_seq_axis(const Shape& s, int64_t axis) const;

 private:
  void infer_shapes();
  void record_value(const onnx::ValueInfoProto& vi);
  void index();
  void collect_consumed(const onnx::GraphProto& g);

  onnx::ModelProto model_;
  std::filesystem::path source_;
  const ExportManifest* manifest_;
  int64_t opset_ = 0;
  std::string inference_failure_;
  std::unordered_map<std::string, Shape> shapes_;
  std::unordered_set<std::string> nontensor_;
  std::unordered_set<std::string> initializers_;
  std::unordered_set<std::string> constants_;  // initializers, Constant outputs, and what only they feed
  std::unordered_map<std::string, const onnx::TensorProto*> const_tensors_;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::unordered_map<std::string, const onnx::NodeProto*> producers_;
  std::unordered_set<std::string> consumed_anywhere_;  // including subgraphs
  std::unordered_set<std::string> graph_outputs_;
  int64_t seq_ = 0;
};

// What a rule runs on: the model, one graph input or output, or one node,
// with the context every rule reads.
struct LintItem {
  const LintContext& context;
  const onnx::ValueInfoProto* value = nullptr;  // input and output rules
  const onnx::NodeProto* node = nullptr;        // node rules
  int index = -1;                               // the node's position in the graph
};

// ---- the rules (core/src/lint/graph_rules/*.cpp) ------------------------------------
// structure.cpp: what onnx's checker refuses or what breaks the DFC first
void missing_tensor(const LintItem&, rules::RuleOut&);
void graph_cycle(const LintItem&, rules::RuleOut&);
void external_data_location(const LintItem&, rules::RuleOut&);
void shape_inference(const LintItem&, rules::RuleOut&);
void opset_17(const LintItem&, rules::RuleOut&);
// inputs_outputs.cpp
void input_static(const LintItem&, rules::RuleOut&);
void input_batch(const LintItem&, rules::RuleOut&);
void input_format(const LintItem&, rules::RuleOut&);
void input_consumed(const LintItem&, rules::RuleOut&);
void output_static(const LintItem&, rules::RuleOut&);
void output_last_position(const LintItem&, rules::RuleOut&);
// nodes.cpp
void node_static(const LintItem&, rules::RuleOut&);
void no_expand(const LintItem&, rules::RuleOut&);
void reshape_transpose(const LintItem&, rules::RuleOut&);
void gather_on_activation(const LintItem&, rules::RuleOut&);
void known_op(const LintItem&, rules::RuleOut&);
// gelu_erf.cpp
void erf_outside_gelu(const LintItem&, rules::RuleOut&);
// position_mixing.cpp
void position_mixing(const LintItem&, rules::RuleOut&);
// export_contract.cpp: the graph against the manifest export wrote with it
void onnx_checker(const LintItem&, rules::RuleOut&);
void manifest_inputs(const LintItem&, rules::RuleOut&);
void manifest_output(const LintItem&, rules::RuleOut&);

}  // namespace llm2hef::core::lint
