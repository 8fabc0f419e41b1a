// llm2hef lint: the graph contract (DESIGN.md) checked on any ONNX file.
//
// The model is parsed with protobuf only: external data is never opened, so
// the cost is proportional to model.onnx, not to the weights. onnx shape
// inference fills in value shapes the file does not record.
#include "llm2hef/core/lint.hpp"
#include "llm2hef/core/regular_file.hpp"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

constexpr const char* kS2 = "hailo-contract.md §2";
constexpr const char* kS3 = "hailo-contract.md §3";
constexpr const char* kContract = "DESIGN.md graph contract, hailo-contract.md §2";
constexpr const char* kOnnx = "ONNX IR: defined, acyclic, self-contained";

// Ops the DFC parser has been seen to accept in the proven formulation
// (hailo-contract.md §2 "Op patterns"), plus trivially safe ones.
// What torch's TorchScript exporter writes for the parsed formulation (§2 "Op
// patterns"): rsqrt is Sqrt then Div(1, .), so Reciprocal is not here;
// LayerNormalization is torch's opset-17 spelling of nn.LayerNorm (GPT-2 in
// SEED's run, docs/gpt2.md).
const std::set<std::string> kKnownOps = {
    "MatMul", "Add",     "Sub",     "Mul",       "Div",       "Pow",    "Sqrt",  "LayerNormalization",
    "ReduceMean", "Sigmoid", "Tanh", "Softmax",  "Reshape",   "Transpose", "Slice", "Concat",
    "Split",  "Neg",     "Identity", "Constant", "Relu",      "Erf"};
// Spellings of a known computation that torch writes otherwise: the hint names torch's.
const std::map<std::string, std::string> kTorchSpelling = {
    {"Reciprocal", "torch writes rsqrt as Sqrt then Div with a constant 1, and 1/x as Div"},
};

const std::set<std::string> kReduceOps = {"ReduceMean", "ReduceSum",  "ReduceMax",       "ReduceMin",
                                          "ReduceProd", "ReduceL1",   "ReduceL2",        "ReduceLogSum",
                                          "ReduceLogSumExp", "ReduceSumSquare"};
const std::set<std::string> kSoftmaxOps = {"Softmax", "LogSoftmax", "Hardmax"};
const std::set<std::string> kPoolOps = {"AveragePool", "MaxPool", "LpPool"};
const std::set<std::string> kGlobalPoolOps = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"};
const std::set<std::string> kGatherOps = {"Gather", "GatherElements", "GatherND"};

// A tensor shape as far as it is known: rank may be unknown; a dim < 0 is unknown or symbolic.
struct Shape {
  bool known = false;
  std::vector<int64_t> dims;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool is_static() const {
    return known && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
  }
};

std::string shape_text(const Shape& s) {
  if (!s.known) return "(rank unknown)";
  std::string out = "[";
  for (size_t i = 0; i < s.dims.size(); ++i) {
    if (i) out += ", ";
    out += s.dims[i] < 0 ? "?" : std::to_string(s.dims[i]);
  }
  return out + "]";
}

Shape shape_of(const onnx::TypeProto& t) {
  Shape s;
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return s;
  s.known = true;
  for (const auto& d : t.tensor_type().shape().dim()) s.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  return s;
}

std::string dims_detail(const onnx::TypeProto& t) {
  if (!t.has_tensor_type() || !t.tensor_type().has_shape()) return "no shape (rank unknown)";
  std::string out = "[";
  int i = 0;
  for (const auto& d : t.tensor_type().shape().dim()) {
    if (i++) out += ", ";
    if (d.has_dim_value())
      out += std::to_string(d.dim_value());
    else if (d.has_dim_param() && !d.dim_param().empty())
      out += "'" + d.dim_param() + "'";
    else
      out += "?";
  }
  return out + "]";
}

std::string op_label(const onnx::NodeProto& n) {
  if (n.domain().empty() || n.domain() == "ai.onnx") return n.op_type();
  return n.domain() + ":" + n.op_type();
}

bool default_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, int index) {
  if (!n.name().empty()) return n.name();
  if (n.output_size() > 0 && !n.output(0).empty()) return n.output(0);
  return "#" + std::to_string(index);
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<int64_t> attr_int(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return a->i();
}

std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// The integers held by a small in-file tensor (shapes, axes); nullopt for external or other types.
std::optional<std::vector<int64_t>> tensor_ints(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<int64_t> out;
  if (t.data_type() == onnx::TensorProto::INT64) {
    if (t.has_raw_data()) {
      const std::string& raw = t.raw_data();
      out.resize(raw.size() / 8);
      std::memcpy(out.data(), raw.data(), out.size() * 8);
    } else {
      out.assign(t.int64_data().begin(), t.int64_data().end());
    }
    return out;
  }
  if (t.data_type() == onnx::TensorProto::INT32) {
    if (t.has_raw_data()) {
      const std::string& raw = t.raw_data();
      std::vector<int32_t> v(raw.size() / 4);
      std::memcpy(v.data(), raw.data(), v.size() * 4);
      out.assign(v.begin(), v.end());
    } else {
      out.assign(t.int32_data().begin(), t.int32_data().end());
    }
    return out;
  }
  return std::nullopt;
}

int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

class Linter {
 public:
  Linter(onnx::ModelProto model, std::string file) : model_(std::move(model)) { report_.file = std::move(file); }

  LintReport run() {
    opset_ = default_opset();
    infer_shapes();
    index();
    check_structure();
    check_model();
    check_inputs();
    const auto& g = model_.graph();
    for (int i = 0; i < g.node_size(); ++i) check_node(g.node(i), i);
    check_outputs();
    return std::move(report_);
  }

 private:
  onnx::ModelProto model_;
  LintReport report_;
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
  std::unordered_set<std::string> flagged_error_nodes_;
  int64_t seq_ = 0;

  void add(const char* rule, LintSeverity sev, LintSubject subject, const std::string& name, const std::string& op,
           const std::string& message, const char* section) {
    report_.findings.push_back(LintFinding{rule, sev, subject, name, op, message, section});
    if (sev == LintSeverity::error && subject == LintSubject::node) flagged_error_nodes_.insert(name);
  }
  void node_finding(const char* rule, LintSeverity sev, const onnx::NodeProto& n, int index, const std::string& msg,
                    const char* section) {
    add(rule, sev, LintSubject::node, node_label(n, index), op_label(n), msg, section);
  }

  int64_t default_opset() const {
    for (const auto& o : model_.opset_import())
      if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
    return 0;
  }

  void infer_shapes() {
    std::unordered_map<std::string, int> opsets;
    for (const auto& o : model_.opset_import()) opsets[o.domain()] = static_cast<int>(o.version());
    onnx::ModelProto backup = model_;
    try {
      onnx::ShapeInferenceOptions strict(false, 1, true);
      onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), strict);
      return;
    } catch (const std::exception& e) {
      inference_failure_ = e.what();
    }
    // Keep what can be inferred around the failing node.
    model_ = std::move(backup);
    try {
      onnx::ShapeInferenceOptions lenient(false, 0, true);
      onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), lenient);
    } catch (const std::exception&) {
      // Fall back to the shapes the file records.
    }
  }

  void record_value(const onnx::ValueInfoProto& vi) {
    if (vi.type().value_case() != onnx::TypeProto::kTensorType &&
        vi.type().value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      nontensor_.insert(vi.name());
      return;
    }
    Shape s = shape_of(vi.type());
    auto it = shapes_.find(vi.name());
    // Prefer the more complete description (graph outputs may be less precise than inferred value_info).
    if (it == shapes_.end() || (!it->second.is_static() && s.known)) shapes_[vi.name()] = s;
  }

  void index() {
    const auto& g = model_.graph();
    for (const auto& t : g.initializer()) {
      initializers_.insert(t.name());
      constants_.insert(t.name());
      const_tensors_[t.name()] = &t;
      shapes_[t.name()] = Shape{true, std::vector<int64_t>(t.dims().begin(), t.dims().end())};
    }
    for (const auto& vi : g.value_info()) record_value(vi);
    for (const auto& vi : g.input()) record_value(vi);
    for (const auto& vi : g.output()) {
      record_value(vi);
      graph_outputs_.insert(vi.name());
    }
    for (const auto& n : g.node()) {
      for (const auto& in : n.input())
        if (!in.empty()) consumers_[in].push_back(&n);
      if (n.op_type() == "Constant" && default_domain(n) && n.output_size() == 1) {
        constants_.insert(n.output(0));
        if (const auto* v = find_attr(n, "value"); v && v->has_t()) {
          const_tensors_[n.output(0)] = &v->t();
          shapes_[n.output(0)] = Shape{true, std::vector<int64_t>(v->t().dims().begin(), v->t().dims().end())};
        }
      }
    }
    collect_consumed(g);
    // Constant propagation: a node fed only by constants yields constants (nodes are topologically sorted).
    for (const auto& n : g.node()) {
      if (n.input_size() == 0) continue;
      bool all_const = true;
      for (const auto& in : n.input())
        if (!in.empty() && !constants_.count(in)) all_const = false;
      if (all_const)
        for (const auto& out : n.output()) constants_.insert(out);
    }
    // SEQ: the first graph input's dim 1 (inputs_embeds [1, SEQ, HIDDEN]).
    for (const auto& vi : g.input()) {
      if (initializers_.count(vi.name())) continue;
      Shape s = shapes_[vi.name()];
      if (s.known && s.rank() >= 2 && s.dims[1] > 0) seq_ = s.dims[1];
      break;
    }
  }

  void collect_consumed(const onnx::GraphProto& g) {
    for (const auto& n : g.node()) {
      for (const auto& in : n.input()) consumed_anywhere_.insert(in);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) collect_consumed(a.g());
        for (const auto& sub : a.graphs()) collect_consumed(sub);
      }
    }
  }

  Shape shape(const std::string& name) const {
    auto it = shapes_.find(name);
    return it == shapes_.end() ? Shape{} : it->second;
  }
  bool is_const(const std::string& name) const { return constants_.count(name) > 0; }

  std::optional<std::vector<int64_t>> const_ints(const std::string& name) const {
    auto it = const_tensors_.find(name);
    if (it == const_tensors_.end()) return std::nullopt;
    return tensor_ints(*it->second);
  }

  // True when `axis` (normalized) of a tensor shaped `s` is its sequence axis:
  // a dim equal to SEQ that is neither the batch axis nor the last (feature / key) axis.
  bool is_seq_axis(const Shape& s, int64_t axis) const {
    if (seq_ <= 1 || !s.known || axis < 0 || axis >= s.rank()) return false;
    if (s.dims[static_cast<size_t>(axis)] != seq_) return false;
    if (s.rank() == 2) return axis == 0;
    return axis >= 1 && axis <= s.rank() - 2;
  }

  // ---- model and graph inputs -------------------------------------------------

  // What onnx's own checker would refuse, or what would break the DFC
  // before any Hailo rule applies: tensors nobody defines, cycles, and
  // external data outside the model's folder.
  void check_structure() {
    const auto& g = model_.graph();
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& out : g.node(i).output())
        if (!out.empty()) producer[out] = i;
    std::unordered_set<std::string> defined(initializers_);
    for (const auto& vi : g.input()) defined.insert(vi.name());
    for (int i = 0; i < g.node_size(); ++i)
      for (const auto& in : g.node(i).input())
        if (!in.empty() && !defined.count(in) && !producer.count(in))
          node_finding("missing-tensor", LintSeverity::error, g.node(i), i,
                       "input '" + in + "' is not a graph input, an initializer or any node's output", kOnnx);

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
          node_finding("graph-cycle", LintSeverity::error, g.node(i), i,
                       "lies on a cycle (" + std::to_string(static_cast<size_t>(g.node_size()) - sorted) +
                           " nodes never become ready); an ONNX graph must be acyclic",
                       kOnnx);
          break;
        }

    for (const auto& t : g.initializer()) {
      if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
      for (const auto& entry : t.external_data()) {
        if (entry.key() != "location") continue;
        const std::filesystem::path loc(entry.value());
        bool escapes = loc.is_absolute() || loc.empty();
        for (const auto& part : loc) escapes = escapes || part == "..";
        if (escapes)
          add("external-data-location", LintSeverity::error, LintSubject::model, t.name(), "",
              "initializer '" + t.name() + "' keeps its data at '" + entry.value() +
                  "', outside the model's folder (absolute or '..'); onnx 1.12 would follow it",
              kOnnx);
      }
    }
  }

  void check_model() {
    if (!inference_failure_.empty()) {
      std::string what;
      for (char c : inference_failure_) what += (c == '\n' || c == '\r') ? ' ' : c;
      while (!what.empty() && what.back() == ' ') what.pop_back();
      if (what.size() > 400) what = what.substr(0, 400) + "...";
      add("shape-inference", LintSeverity::warning, LintSubject::model, "", "",
          "onnx shape inference failed (" + what +
              "); the DFC runs it too, and shapes lint could not infer are treated as unknown",
          kS2);
    }
    if (opset_ != 17)
      add("opset", LintSeverity::warning, LintSubject::model, "", "",
          "default-domain opset " + std::to_string(opset_) +
              "; the formulation proven with the DFC is opset 17 (other opsets are unproven)",
          kS2);
  }

  void check_inputs() {
    const auto& g = model_.graph();
    for (const auto& vi : g.input()) {
      if (initializers_.count(vi.name())) continue;  // an initializer with a default, not a runtime input
      const std::string& name = vi.name();
      const Shape s = shape_of(vi.type());
      if (!s.is_static())
        add("dynamic-shape", LintSeverity::error, LintSubject::input, name, "",
            "input shape " + dims_detail(vi.type()) +
                " is not static; the DFC needs every input declared with a static shape in net_input_shapes "
                "(\"ValueError: Unspecified inputs\")",
            kS3);
      if (s.known && s.rank() >= 1 && s.dims[0] > 1)
        add("batch", LintSeverity::error, LintSubject::input, name, "",
            "batch " + std::to_string(s.dims[0]) + " in " + shape_text(s) + "; the contract is batch 1", kS2);
      if (s.known && s.rank() == 4)
        add("input-format", LintSeverity::warning, LintSubject::input, name, "",
            "rank-4 input " + shape_text(s) + ": give net_input_format {'" + name +
                "': [Dims.BATCH, Dims.HEIGHT, Dims.WIDTH, Dims.CHANNELS]} or the DFC reads it as NCHW and both "
                "real dims become spatial (rank-3 inputs take [Dims.BATCH, Dims.WIDTH, Dims.CHANNELS])",
            kS3);
      else if (s.known && s.rank() != 3)
        add("input-format", LintSeverity::warning, LintSubject::input, name, "",
            "rank-" + std::to_string(s.rank()) + " input " + shape_text(s) +
                ": net_input_format is documented only for rank 3 ([Dims.BATCH, Dims.WIDTH, Dims.CHANNELS]) and "
                "rank 4 ([Dims.BATCH, Dims.HEIGHT, Dims.WIDTH, Dims.CHANNELS])",
            kS3);
      if (!consumed_anywhere_.count(name))
        add("unconsumed-input", LintSeverity::error, LintSubject::input, name, "",
            "input is never consumed by a node; the runtime feeds all six inputs and the DFC numbers "
            "input_layer1..N in ONNX input order",
            kS2);
    }
  }

  void check_outputs() {
    for (const auto& vi : model_.graph().output()) {
      const std::string& name = vi.name();
      Shape s = shape(name);
      const Shape declared = shape_of(vi.type());
      if (!declared.is_static() && !s.is_static())
        add("dynamic-shape", LintSeverity::error, LintSubject::output, name, "",
            "output shape " + dims_detail(vi.type()) + " is not static", kS2);
      if (!s.known) continue;
      if (s.rank() != 3)
        add("output-not-last-position", LintSeverity::error, LintSubject::output, name, "",
            "output shape " + shape_text(s) +
                "; the contract is logits [1, 1, VOCAB]: final norm, slice of the last position, then lm_head",
            kS2);
      else if (s.dims[1] >= 0 && s.dims[1] != 1)
        add("output-not-last-position", LintSeverity::error, LintSubject::output, name, "",
            "output shape " + shape_text(s) + " carries " + std::to_string(s.dims[1]) +
                " positions; slice the last position before lm_head (full-sequence logits made the lm_head "
                "unplaceable)",
            kS2);
    }
  }

  // ---- nodes ---------------------------------------------------------------------

  void check_node(const onnx::NodeProto& n, int index) {
    const bool std_op = default_domain(n);
    check_dynamic(n, index);
    if (std_op) {
      const std::string& op = n.op_type();
      if (op == "Expand")
        node_finding("expand", LintSeverity::error, n, index,
                     "Expand is not parsable (SEED round 1); expand GQA k/v with a constant 0/1 "
                     "(NKVHEAD*HD) x (NHEAD*HD) matmul in repeat_interleave order",
                     kS2);
      if (op == "Reshape") check_reshape(n, index);
      if (kGatherOps.count(op) && n.input_size() > 0 && !is_const(n.input(0)))
        node_finding("gather-on-activation", LintSeverity::error, n, index,
                     op + " on the activation '" + n.input(0) +
                         "' is not parsable; embedding lookups belong to the host (the runtime reads "
                         "embeddings.bin) and position picks should be Slice",
                     kS2);
      check_position_mixing(n, index);
    }
    if (!std_op || !kKnownOps.count(n.op_type())) {
      if (!flagged_error_nodes_.count(node_label(n, index)))
        node_finding("unknown-op", LintSeverity::warning, n, index,
                     op_label(n) +
                         " is outside the op patterns the DFC parser is known to accept; a graph built this way is "
                         "unproven against the DFC" +
                         (std_op && kTorchSpelling.count(n.op_type()) ? " (" + kTorchSpelling.at(n.op_type()) + ")"
                                                                      : std::string()),
                     kS2);
    }
  }

  // Dynamic shapes are reported where they originate: a node whose inputs are static but an output is not.
  void check_dynamic(const onnx::NodeProto& n, int index) {
    for (const auto& in : n.input()) {
      if (in.empty() || nontensor_.count(in)) continue;
      if (!shape(in).is_static()) return;  // a consequence of something upstream
    }
    for (const auto& out : n.output()) {
      if (out.empty() || nontensor_.count(out) || graph_outputs_.count(out)) continue;
      Shape s = shape(out);
      if (s.is_static()) continue;
      node_finding("dynamic-shape", LintSeverity::error, n, index,
                   "output '" + out + "' has shape " + shape_text(s) +
                       (s.known ? "" : ": onnx shape inference could not infer it") +
                       "; the DFC needs static shapes throughout",
                   kS2);
      return;
    }
  }

  void check_reshape(const onnx::NodeProto& n, int index) {
    if (n.output_size() == 0 || n.input_size() < 1) return;
    const std::string& out = n.output(0);
    Shape os = shape(out);
    int64_t out_rank = os.known ? os.rank() : -1;
    if (out_rank < 0 && n.input_size() > 1)
      if (auto target = const_ints(n.input(1))) out_rank = static_cast<int64_t>(target->size());
    if (out_rank != 4) return;
    Shape is = shape(n.input(0));
    if (is.known && is.rank() != 3) return;
    // A head split keeps [b, s] and splits the last axis into [heads, hd].
    if (is.is_static() && os.is_static() &&
        (os.dims[0] != is.dims[0] || os.dims[1] != is.dims[1] || os.dims[2] * os.dims[3] != is.dims[2]))
      return;
    auto it = consumers_.find(out);
    std::vector<const onnx::NodeProto*> users = it == consumers_.end() ? std::vector<const onnx::NodeProto*>{}
                                                                        : it->second;
    const bool ok = users.size() == 1 && users[0]->op_type() == "Transpose" && default_domain(*users[0]) &&
                    !graph_outputs_.count(out);
    if (ok) return;
    std::vector<std::string> names;
    for (const auto* u : users) names.push_back("'" + node_label(*u, -1) + "' (" + op_label(*u) + ")");
    if (graph_outputs_.count(out)) names.push_back("the graph output");
    node_finding("reshape-transpose", LintSeverity::error, n, index,
                 "head-split Reshape to " + shape_text(os) + " must feed exactly one Transpose, but feeds " +
                     (names.empty() ? std::string("nothing") : join(names)) +
                     "; nothing may sit between the head Reshape and its Transpose (SEED round 1: "
                     "\"UnsupportedShuffleLayerError: Reshape\")",
                 kS2);
  }

  void mixing(const onnx::NodeProto& n, int index, const std::string& what) {
    node_finding("position-mixing", LintSeverity::error, n, index,
                 what +
                     "; tokens may interact only inside the attention matmuls (Q K^T, P V), otherwise the DFC "
                     "cannot split prefill and token-by-token scopes over the KV cache",
                 kContract);
  }

  std::optional<std::vector<int64_t>> reduce_axes(const onnx::NodeProto& n, const Shape& s, bool& unresolved) const {
    unresolved = false;
    std::optional<std::vector<int64_t>> axes = attr_ints(n, "axes");
    if (!axes && n.input_size() > 1 && !n.input(1).empty()) {
      axes = const_ints(n.input(1));
      if (!axes) {
        unresolved = true;
        return std::nullopt;
      }
    }
    if (!axes || axes->empty()) {
      if (attr_int(n, "noop_with_empty_axes").value_or(0) == 1) return std::vector<int64_t>{};
      if (!s.known) {
        unresolved = true;
        return std::nullopt;
      }
      std::vector<int64_t> all;
      for (int64_t i = 0; i < s.rank(); ++i) all.push_back(i);
      return all;
    }
    return axes;
  }

  void check_position_mixing(const onnx::NodeProto& n, int index) {
    const std::string& op = n.op_type();
    if (n.input_size() == 0) return;
    if (op == "MatMul" && n.input_size() == 2) {
      check_matmul(n, index);
      return;
    }
    const std::string& x = n.input(0);
    if (x.empty() || is_const(x)) return;  // constant subgraphs mix nothing at run time
    const Shape s = shape(x);

    if (kReduceOps.count(op) || op == "ArgMax" || op == "ArgMin") {
      bool unresolved = false;
      std::optional<std::vector<int64_t>> axes;
      if (op == "ArgMax" || op == "ArgMin")
        axes = std::vector<int64_t>{attr_int(n, "axis").value_or(0)};
      else
        axes = reduce_axes(n, s, unresolved);
      if (unresolved) {
        if (seq_ > 1) mixing(n, index, op + " over axes lint cannot resolve (input " + shape_text(s) + ")");
        return;
      }
      for (int64_t a : *axes) {
        int64_t na = s.known ? normalize_axis(a, s.rank()) : a;
        if (is_seq_axis(s, na)) {
          mixing(n, index,
                 op + " over axis " + std::to_string(a) + " of " + shape_text(s) + " reduces across positions");
          return;
        }
      }
      return;
    }
    if (kSoftmaxOps.count(op)) {
      const int64_t axis = attr_int(n, "axis").value_or(opset_ >= 13 ? -1 : 1);
      if (!s.known) return;
      const int64_t na = normalize_axis(axis, s.rank());
      if (na != s.rank() - 1)
        mixing(n, index,
               op + " on axis " + std::to_string(axis) + " of " + shape_text(s) +
                   " must be on the last axis (the keys of the attention scores)");
      return;
    }
    if (op == "CumSum") {
      std::optional<std::vector<int64_t>> axis = n.input_size() > 1 ? const_ints(n.input(1)) : std::nullopt;
      if (!axis || axis->size() != 1 || !s.known) {
        mixing(n, index, "CumSum over an axis lint cannot resolve (input " + shape_text(s) + ")");
        return;
      }
      const int64_t na = normalize_axis((*axis)[0], s.rank());
      if (is_seq_axis(s, na))
        mixing(n, index, "CumSum over axis " + std::to_string((*axis)[0]) + " of " + shape_text(s) +
                             " is a cumulative sum across positions");
      return;
    }
    if (op == "LayerNormalization" || op == "LpNormalization" || op == "MeanVarianceNormalization") {
      if (!s.known) return;
      std::vector<int64_t> axes;
      if (op == "LayerNormalization") {
        for (int64_t a = normalize_axis(attr_int(n, "axis").value_or(-1), s.rank()); a < s.rank(); ++a)
          axes.push_back(a);
      } else if (op == "LpNormalization") {
        axes.push_back(normalize_axis(attr_int(n, "axis").value_or(-1), s.rank()));
      } else {
        for (int64_t a : attr_ints(n, "axes").value_or(std::vector<int64_t>{0, 2, 3}))
          axes.push_back(normalize_axis(a, s.rank()));
      }
      for (int64_t a : axes)
        if (is_seq_axis(s, a)) {
          mixing(n, index, op + " normalizes across axis " + std::to_string(a) + " of " + shape_text(s));
          return;
        }
      return;
    }
    if (op == "Conv" || op == "ConvTranspose" || kPoolOps.count(op) || kGlobalPoolOps.count(op)) {
      check_windowed(n, index, s);
      return;
    }
  }

  // Conv / pooling: a window or stride > 1 along a spatial axis of SEQ positions mixes positions.
  void check_windowed(const onnx::NodeProto& n, int index, const Shape& s) {
    const std::string& op = n.op_type();
    const int64_t spatial = s.known ? s.rank() - 2 : -1;
    auto along_seq = [&](int64_t j) {  // spatial axis j (0-based)
      if (!s.known) return true;      // cannot tell: assume the worst
      const int64_t d = s.dims[static_cast<size_t>(2 + j)];
      return d < 0 || (seq_ > 1 && d == seq_);
    };
    if (kGlobalPoolOps.count(op)) {
      for (int64_t j = 0; j < std::max<int64_t>(spatial, 0); ++j)
        if (along_seq(j)) {
          mixing(n, index, op + " over " + shape_text(s) + " pools across positions");
          return;
        }
      return;
    }
    std::vector<int64_t> kernel = attr_ints(n, "kernel_shape").value_or(std::vector<int64_t>{});
    if (kernel.empty() && (op == "Conv" || op == "ConvTranspose") && n.input_size() > 1) {
      Shape w = shape(n.input(1));
      if (w.known && w.rank() > 2) kernel.assign(w.dims.begin() + 2, w.dims.end());
    }
    std::vector<int64_t> strides = attr_ints(n, "strides").value_or(std::vector<int64_t>{});
    const size_t count = std::max(kernel.size(), strides.size());
    for (size_t j = 0; j < count; ++j) {
      const int64_t k = j < kernel.size() ? kernel[j] : 1;
      const int64_t st = j < strides.size() ? strides[j] : 1;
      if ((k != 1 || st != 1) && (spatial < 0 || static_cast<int64_t>(j) < spatial) &&
          along_seq(static_cast<int64_t>(j))) {
        mixing(n, index,
               op + " with kernel " + std::to_string(k) + ", stride " + std::to_string(st) + " over " + shape_text(s) +
                   " mixes neighbouring positions (a convolution over time)");
        return;
      }
    }
  }

  void check_matmul(const onnx::NodeProto& n, int index) {
    const std::string& a = n.input(0);
    const std::string& b = n.input(1);
    const bool ca = is_const(a), cb = is_const(b);
    if (ca && cb) return;
    const Shape sa = shape(a), sb = shape(b);
    if (!ca && cb) return;  // a linear layer: position-wise
    if (seq_ <= 1) return;
    if (ca && !cb) {
      // constant x activation contracts the activation's dim -2: across positions when that is the sequence axis
      if (sb.known && sb.rank() >= 2 && is_seq_axis(sb, sb.rank() - 2))
        mixing(n, index,
               "MatMul of the constant '" + a + "' with the activation " + shape_text(sb) +
                   " contracts over the sequence axis");
      return;
    }
    // Two activations: only Q K^T (second operand [.., d, SEQ]) and P V (second operand [.., SEQ, d]).
    if (!sb.known || sb.rank() < 2 || !sa.known) return;  // unknown shapes are reported as dynamic-shape
    const int64_t last = sb.dims[static_cast<size_t>(sb.rank() - 1)];
    const int64_t second = sb.dims[static_cast<size_t>(sb.rank() - 2)];
    if (last < 0 || second < 0) return;
    if (last == seq_ || second == seq_) return;
    mixing(n, index,
           "MatMul of two activations " + shape_text(sa) + " x " + shape_text(sb) +
               " is not an attention matmul (the second operand carries no SEQ=" + std::to_string(seq_) +
               " axis at -1 (Q K^T) or -2 (P V))");
  }
};

onnx::ModelProto parse_model(const std::string& bytes, const std::string& label) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX))
    throw BadInput(label + ": larger than protobuf's 2 GiB limit; save the weights as ONNX external data");
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw BadInput(label + ": not an ONNX model (protobuf parse failed)");
  if (!model.has_graph() || (model.ir_version() <= 0 && model.opset_import_size() == 0))
    throw BadInput(label + ": not an ONNX model (no graph)");
  return model;
}

}  // namespace

size_t LintReport::errors() const {
  return static_cast<size_t>(std::count_if(findings.begin(), findings.end(),
                                           [](const LintFinding& f) { return f.severity == LintSeverity::error; }));
}

size_t LintReport::warnings() const { return findings.size() - errors(); }

const std::vector<LintRule>& lint_rules() {
  static const std::vector<LintRule> rules = {
      {"shape-inference", LintSeverity::warning, kS2, "onnx shape inference failed on the graph"},
      {"opset", LintSeverity::warning, kS2, "default-domain opset other than 17"},
      {"dynamic-shape", LintSeverity::error, kS2,
       "an input, output or value with a symbolic/unknown dimension or unknown rank (inputs cite §3)"},
      {"batch", LintSeverity::error, kS2, "an input with batch > 1"},
      {"input-format", LintSeverity::warning, kS3, "a rank-4 (or rank other than 3) input needs net_input_format"},
      {"unconsumed-input", LintSeverity::error, kS2, "a graph input no node consumes"},
      {"expand", LintSeverity::error, kS2, "an Expand node (GQA must be a constant 0/1 matmul)"},
      {"reshape-transpose", LintSeverity::error, kS2,
       "a head-split Reshape (rank 3 -> 4) not consumed by exactly one Transpose"},
      {"gather-on-activation", LintSeverity::error, kS2, "Gather/GatherElements/GatherND on a non-constant tensor"},
      {"position-mixing", LintSeverity::error, kContract,
       "an op mixing positions outside the attention matmuls (reduce/softmax/cumsum/conv/pool over SEQ, "
       "non-attention activation x activation MatMul, constant x activation MatMul over SEQ)"},
      {"unknown-op", LintSeverity::warning, kS2, "an op outside the patterns the DFC is known to parse"},
      {"output-not-last-position", LintSeverity::error, kS2, "a graph output that is not [1, 1, N]"},
      {"missing-tensor", LintSeverity::error, kOnnx, "a node input that no graph input, initializer or node defines"},
      {"graph-cycle", LintSeverity::error, kOnnx, "nodes that depend on each other in a cycle"},
      {"external-data-location", LintSeverity::error, kOnnx,
       "an initializer whose external data is at an absolute path or under '..'"},
  };
  return rules;
}

LintReport lint_onnx_bytes(const std::string& bytes, const std::string& label) {
  Linter linter(parse_model(bytes, label), label);
  return linter.run();
}

LintReport lint_onnx_file(const std::filesystem::path& path) {
  // protobuf cannot parse a message over 2 GiB: weights must be external.
  constexpr uint64_t kMaxOnnxBytes = (uint64_t{1} << 31) - 1;
  const RegularFile file(path);
  if (file.size() > kMaxOnnxBytes)
    throw BadInput(path.string() + ": " + std::to_string(file.size()) +
                   " bytes; an ONNX protobuf cannot exceed 2 GiB (keep the weights as external data)");
  return lint_onnx_bytes(file.read_all(kMaxOnnxBytes), path.string());
}

std::string lint_text(const LintReport& report) {
  std::ostringstream out;
  for (const auto& f : report.findings) {
    out << (f.severity == LintSeverity::error ? "error" : "warning") << " [" << f.rule << "] ";
    switch (f.subject) {
      case LintSubject::model: out << "model"; break;
      case LintSubject::input: out << "input '" << f.name << "'"; break;
      case LintSubject::output: out << "output '" << f.name << "'"; break;
      case LintSubject::node: out << "node '" << f.name << "' (" << f.op << ")"; break;
    }
    out << ": " << f.message << " (" << f.section << ")\n";
  }
  const size_t e = report.errors(), w = report.warnings();
  out << report.file << ": " << e << (e == 1 ? " error, " : " errors, ") << w << (w == 1 ? " warning" : " warnings");
  if (e == 0) out << " - passes the graph contract";
  out << "\n";
  return out.str();
}

}  // namespace llm2hef::core
