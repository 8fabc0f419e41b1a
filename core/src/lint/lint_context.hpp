// What the lint rules share (private to core/src/lint): the model with the
// shapes onnx inference adds, indexes built once over it, and the rule row
// type. Each rule is one function in core/src/lint/rules/; the table in
// lint.cpp gives its name, subject, severity and section.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

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
  LintContext(onnx::ModelProto model, std::filesystem::path source, const nlohmann::json* manifest);

  const onnx::ModelProto& model() const { return model_; }
  const onnx::GraphProto& graph() const { return model_.graph(); }
  const std::filesystem::path& source() const { return source_; }
  const nlohmann::json* manifest() const { return manifest_; }
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
  // True when `axis` (normalized) of a tensor shaped `s` is its sequence axis.
  bool is_seq_axis(const Shape& s, int64_t axis) const;

 private:
  void infer_shapes();
  void record_value(const onnx::ValueInfoProto& vi);
  void index();
  void collect_consumed(const onnx::GraphProto& g);

  onnx::ModelProto model_;
  std::filesystem::path source_;
  const nlohmann::json* manifest_;
  int64_t opset_ = 0;
  std::string inference_failure_;
  std::unordered_map<std::string, Shape> shapes_;
  std::unordered_set<std::string> nontensor_;
  std::unordered_set<std::string> initializers_;
  std::unordered_set<std::string> constants_;  // initializers, Constant outputs, and what only they feed
  std::unordered_map<std::string, const onnx::TensorProto*> const_tensors_;
  std::unordered_map<std::string, std::vector<const onnx::NodeProto*>> consumers_;
  std::unordered_set<std::string> consumed_anywhere_;  // including subgraphs
  std::unordered_set<std::string> graph_outputs_;
  int64_t seq_ = 0;
};

// What a rule runs on: the model, one graph input or output, or one node.
struct LintItem {
  const onnx::ValueInfoProto* value = nullptr;  // input and output rules
  const onnx::NodeProto* node = nullptr;        // node rules
  int index = -1;                               // the node's position in the graph
};

// Findings of one rule, with its name, severity and section.
class LintOut {
 public:
  LintOut(LintReport& report, std::unordered_set<std::string>& error_nodes, const LintRule& rule, const LintItem& item)
      : report_(report), error_nodes_(error_nodes), rule_(rule), item_(item) {}
  // A finding about the item the rule runs on.
  void fail(const std::string& message);
  // About one node, from a rule that runs on the whole model.
  void fail_node(const onnx::NodeProto& n, int index, const std::string& message);
  // About the model, naming a part of it (e.g. an initializer).
  void fail_model(const std::string& name, const std::string& message);
  // An earlier rule found an error on this node.
  bool node_has_error(const std::string& label) const { return error_nodes_.count(label) > 0; }

 private:
  void add(LintSubject subject, const std::string& name, const std::string& op, const std::string& message);
  LintReport& report_;
  std::unordered_set<std::string>& error_nodes_;
  const LintRule& rule_;
  const LintItem& item_;
};

using LintCheck = void (*)(const LintContext&, const LintItem&, LintOut&);

// ---- the rules (core/src/lint/rules/*.cpp) ------------------------------------
// structure.cpp: what onnx's checker refuses or what breaks the DFC first
void missing_tensor(const LintContext&, const LintItem&, LintOut&);
void graph_cycle(const LintContext&, const LintItem&, LintOut&);
void external_data_location(const LintContext&, const LintItem&, LintOut&);
void shape_inference(const LintContext&, const LintItem&, LintOut&);
void opset_17(const LintContext&, const LintItem&, LintOut&);
// inputs_outputs.cpp
void input_static(const LintContext&, const LintItem&, LintOut&);
void input_batch(const LintContext&, const LintItem&, LintOut&);
void input_format(const LintContext&, const LintItem&, LintOut&);
void input_consumed(const LintContext&, const LintItem&, LintOut&);
void output_static(const LintContext&, const LintItem&, LintOut&);
void output_last_position(const LintContext&, const LintItem&, LintOut&);
// nodes.cpp
void node_static(const LintContext&, const LintItem&, LintOut&);
void no_expand(const LintContext&, const LintItem&, LintOut&);
void reshape_transpose(const LintContext&, const LintItem&, LintOut&);
void gather_on_activation(const LintContext&, const LintItem&, LintOut&);
void known_op(const LintContext&, const LintItem&, LintOut&);
// position_mixing.cpp
void position_mixing(const LintContext&, const LintItem&, LintOut&);
// export_contract.cpp: the graph against the manifest export wrote with it
void onnx_checker(const LintContext&, const LintItem&, LintOut&);
void manifest_inputs(const LintContext&, const LintItem&, LintOut&);
void manifest_output(const LintContext&, const LintItem&, LintOut&);

}  // namespace llm2hef::core::lint
