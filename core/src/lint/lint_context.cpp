// The lint context: shapes (with onnx inference), constants, consumers and
// SEQ, computed once for every rule.
#include "lint_context.hpp"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>

namespace llm2hef::core::lint {

bool Shape::is_static() const {
  return known && std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

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

rules::Subject node_subject(const onnx::NodeProto& n, int index) { return {"node", node_label(n, index), op_label(n)}; }

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
namespace {
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

// The value of a one-element FLOAT or DOUBLE tensor held in the file.
std::optional<double> tensor_scalar(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  for (int64_t d : t.dims())  // one element: every dim 1 (no product, which a crafted file could overflow)
    if (d != 1) return std::nullopt;
  if (t.data_type() == onnx::TensorProto::FLOAT) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != sizeof(float)) return std::nullopt;
      float v;
      std::memcpy(&v, t.raw_data().data(), sizeof v);
      return v;
    }
    if (t.float_data_size() == 1) return t.float_data(0);
    return std::nullopt;
  }
  if (t.data_type() == onnx::TensorProto::DOUBLE) {
    if (t.has_raw_data()) {
      if (t.raw_data().size() != sizeof(double)) return std::nullopt;
      double v;
      std::memcpy(&v, t.raw_data().data(), sizeof v);
      return v;
    }
    if (t.double_data_size() == 1) return t.double_data(0);
  }
  return std::nullopt;
}

}  // namespace

int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

LintContext::LintContext(onnx::ModelProto model, std::filesystem::path source, const ExportManifest* manifest)
    : model_(std::move(model)), source_(std::move(source)), manifest_(manifest) {
  for (const auto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset_ = o.version();
      break;
    }
  infer_shapes();
  index();
}

void LintContext::infer_shapes() {
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

void LintContext::record_value(const onnx::ValueInfoProto& vi) {
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

void LintContext::index() {
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
    for (const auto& out : n.output())
      if (!out.empty()) producers_.emplace(out, &n);
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

void LintContext::collect_consumed(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) consumed_anywhere_.insert(in);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_consumed(a.g());
      for (const auto& sub : a.graphs()) collect_consumed(sub);
    }
  }
}

Shape LintContext::shape(const std::string& name) const {
  auto it = shapes_.find(name);
  return it == shapes_.end() ? Shape{} : it->second;
}

std::optional<std::vector<int64_t>> LintContext::const_ints(const std::string& name) const {
  auto it = const_tensors_.find(name);
  if (it == const_tensors_.end()) return std::nullopt;
  return tensor_ints(*it->second);
}

std::optional<double> LintContext::const_scalar(const std::string& name) const {
  auto it = const_tensors_.find(name);
  if (it == const_tensors_.end()) return std::nullopt;
  return tensor_scalar(*it->second);
}

const onnx::NodeProto* LintContext::producer(const std::string& name) const {
  auto it = producers_.find(name);
  return it == producers_.end() ? nullptr : it->second;
}

// True when `axis` (normalized) of a tensor shaped `s` is its sequence axis:
// a dim equal to SEQ that is neither the batch axis nor the last (feature / key) axis.
bool LintContext::is_seq_axis(const Shape& s, int64_t axis) const {
  if (seq_ <= 1 || !s.known || axis < 0 || axis >= s.rank()) return false;
  if (s.dims[static_cast<size_t>(axis)] != seq_) return false;
  if (s.rank() == 2) return axis == 0;
  return axis >= 1 && axis <= s.rank() - 2;
}

std::vector<const onnx::NodeProto*> LintContext::consumers(const std::string& name) const {
  auto it = consumers_.find(name);
  return it == consumers_.end() ? std::vector<const onnx::NodeProto*>{} : it->second;
}

}  // namespace llm2hef::core::lint
