#include "llm2hef/sdk/graph_builder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

#include <onnx/onnx_pb.h>

#include "llm2hef/sdk/background_file_writer.hpp"
#include "llm2hef/sdk/build_info.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "weight_streaming.hpp"

namespace llm2hef::sdk {

namespace {

constexpr int64_t kOpset = 17;
constexpr int64_t kIrVersion = 8;
// Constants up to this size stay inside model.onnx (shapes, scalars, norms of
// tiny models); anything larger is external so the proto stays far below
// protobuf's 2 GB limit and weights never pass through memory twice.
constexpr uint64_t kInlineLimitBytes = 4096;
// External tensors start on 64-byte boundaries.
constexpr uint64_t kAlignment = 64;

void set_shape(onnx::ValueInfoProto* vi, const std::string& name, const std::vector<int64_t>& shape,
               int32_t elem_type = onnx::TensorProto::FLOAT) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* sh = tt->mutable_shape();
  for (int64_t d : shape) sh->add_dim()->set_dim_value(d);
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Every float constant the builder writes is derived from config values
// (epsilons, scales, theta, masks): a NaN or an infinity there is a reading
// that let a bad value through, and it would make every output NaN. The
// checkpoint's own weights are reported separately (nonfinite_weights).
void refuse_nonfinite(const std::string& node, std::span<const float> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]))
      throw InternalError("constant '" + node + "' holds " + std::to_string(values[i]) + " at element " +
                          std::to_string(i) + ": a config value that should have been refused reached the graph");
}

}  // namespace

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw InternalError("cannot broadcast " + shape_string(a) + " with " + shape_string(b));
    out[i] = std::max(da, db);
  }
  return out;
}

struct GraphBuilder::Impl {
  onnx::ModelProto model;
  onnx::GraphProto* graph = nullptr;
  std::vector<std::string> scopes;
  std::map<std::string, int> used_names;
  std::filesystem::path data_path;
  std::unique_ptr<BackgroundFileWriter> data;  // created with the path
  std::unique_ptr<TaskPool> pool;              // the threads that convert weights
  std::vector<StreamScratch> scratch;          // one per pool thread
  std::function<void(uint64_t)> on_bytes;
  std::vector<std::pair<std::string, std::string>> annotations;

  std::string unique(const std::string& base) {
    int& n = used_names[base];
    std::string name = n == 0 ? base : base + "_" + std::to_string(n);
    ++n;
    return name;
  }

  void pad_to_alignment() {
    static const char zeros[kAlignment] = {};
    const uint64_t pad = (kAlignment - data->size() % kAlignment) % kAlignment;
    data->append(std::span<const char>(zeros, static_cast<size_t>(pad)));
  }

  // Starts an external tensor; the caller writes its bytes with write_floats
  // (in order) or stream_weight (blocks anywhere in the tensor's region).
  onnx::TensorProto* begin_external(const std::string& name, const std::vector<int64_t>& shape) {
    pad_to_alignment();
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value(data_path.filename().string());
    auto* off = t->add_external_data();
    off->set_key("offset");
    off->set_value(std::to_string(data->size()));
    auto* len = t->add_external_data();
    len->set_key("length");
    len->set_value(std::to_string(numel(shape) * 4));
    return t;
  }

  // Little-endian hosts only (x86_64, aarch64): float32 bytes as in memory.
  static std::span<const char> bytes_of(std::span<const float> values) {
    return {reinterpret_cast<const char*>(values.data()), values.size_bytes()};
  }

  void write_floats(std::span<const float> values) {
    data->append(bytes_of(values));
    if (on_bytes) on_bytes(data->size());
  }

  onnx::NodeProto* add_node(const std::string& op, const std::string& name, std::initializer_list<std::string> inputs,
                            const std::string& output) {
    auto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(output);
    return n;
  }

  Value record(const std::string& name, std::vector<int64_t> shape) {
    set_shape(graph->add_value_info(), name, shape);
    return Value{name, std::move(shape)};
  }

  std::string int64_constant(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
    return name;
  }
};

GraphBuilder::GraphBuilder(std::string graph_name, std::filesystem::path data_path,
                           std::function<void(uint64_t)> on_bytes, Writeback writeback, unsigned threads)
    : impl_(std::make_unique<Impl>()) {
  impl_->model.set_ir_version(kIrVersion);
  impl_->model.set_producer_name("llm2hef");
  impl_->model.set_producer_version(LLM2HEF_SDK_VERSION);
  auto* opset = impl_->model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  impl_->graph = impl_->model.mutable_graph();
  impl_->graph->set_name(graph_name);
  impl_->data = std::make_unique<BackgroundFileWriter>(data_path, writeback);
  impl_->pool = std::make_unique<TaskPool>(threads);
  impl_->data_path = std::move(data_path);
  impl_->on_bytes = std::move(on_bytes);
}

GraphBuilder::~GraphBuilder() = default;

GraphBuilder::Scope::~Scope() {
  if (g_) g_->impl_->scopes.pop_back();
}

GraphBuilder::Scope GraphBuilder::scope(const std::string& part) {
  impl_->scopes.push_back(part);
  return Scope(*this);
}

std::string GraphBuilder::node_path(const std::string& leaf) const {
  std::string p;
  for (const auto& s : impl_->scopes) p += "/" + s;
  return p + "/" + leaf;
}

std::string GraphBuilder::tensor_path(const std::string& leaf) const {
  std::string p;
  for (const auto& s : impl_->scopes) p += s + ".";
  return p + leaf;
}

Value GraphBuilder::input(const std::string& name, std::vector<int64_t> shape) {
  set_shape(impl_->graph->add_input(), name, shape);
  impl_->used_names[name]++;
  return Value{name, std::move(shape)};
}

void GraphBuilder::output(const Value& v, const std::string& name) {
  auto* g = impl_->graph;
  bool renamed = false;
  for (auto& node : *g->mutable_node())
    for (auto& out : *node.mutable_output())
      if (out == v.name) {
        out = name;
        renamed = true;
      }
  if (!renamed) throw InternalError("graph output '" + name + "': value '" + v.name + "' is not produced by a node");
  for (auto& node : *g->mutable_node())
    for (auto& in : *node.mutable_input())
      if (in == v.name) in = name;
  // The value_info entry for the old name is dropped: outputs carry their own.
  auto* vis = g->mutable_value_info();
  vis->erase(std::remove_if(vis->begin(), vis->end(), [&](const auto& vi) { return vi.name() == v.name; }), vis->end());
  set_shape(g->add_output(), name, v.shape);
}

Value GraphBuilder::weight(const std::string& leaf, const Checkpoint& ckpt, const std::string& tensor,
                           const WeightView& view) {
  return scaled_weight(leaf, ckpt, tensor, view, 1.0f);
}

Value GraphBuilder::scaled_weight(const std::string& leaf, const Checkpoint& ckpt, const std::string& tensor,
                                  const WeightView& view, float scale) {
  const TensorInfo& ti = ckpt.info(tensor);
  WeightPlan plan = plan_weight(ti, view);
  std::string name = impl_->unique(tensor_path(leaf));
  refuse_nonfinite(name + " (scale of weight '" + tensor + "')", std::span<const float>(&scale, 1));
  impl_->begin_external(name, plan.out_shape);
  const uint64_t base = impl_->data->size();
  uint64_t done = 0;
  WeightTarget target{*impl_->data, base, scale, name, [&](uint64_t bytes) {
                        done = bytes;
                        if (impl_->on_bytes) impl_->on_bytes(base + bytes);
                      }};
  stream_weight(ckpt, ti, plan, *impl_->pool, impl_->scratch, target);
  if (done != static_cast<uint64_t>(numel(plan.out_shape)) * sizeof(float))
    throw InternalError("weight '" + tensor + "': " + std::to_string(done) + " bytes streamed for shape " +
                        shape_string(plan.out_shape));
  return Value{name, plan.out_shape};
}

Value GraphBuilder::constant(const std::string& leaf, std::vector<int64_t> shape, std::span<const float> data) {
  if (static_cast<int64_t>(data.size()) != numel(shape))
    throw InternalError("constant '" + leaf + "': " + std::to_string(data.size()) + " values for shape " +
                        shape_string(shape));
  std::string name = impl_->unique(tensor_path(leaf));
  refuse_nonfinite(name, data);
  if (data.size_bytes() <= kInlineLimitBytes) {
    auto* t = impl_->graph->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size_bytes()));
  } else {
    impl_->begin_external(name, shape);
    impl_->write_floats(data);
  }
  return Value{name, std::move(shape)};
}

Value GraphBuilder::constant_rows(const std::string& leaf, std::vector<int64_t> shape, const RowFiller& fill) {
  if (shape.empty()) throw InternalError("constant_rows '" + leaf + "' needs at least one dimension");
  // Rows run over every axis but the last, so that a constant of rank 4 (the
  // band [1, heads, S, S]) streams in blocks too; for a matrix they are its rows.
  const int64_t row_size = shape.back();
  const int64_t rows = row_size == 0 ? 0 : numel(shape) / row_size;
  if (static_cast<uint64_t>(numel(shape)) * 4 <= kInlineLimitBytes) {
    std::vector<float> all(static_cast<size_t>(numel(shape)));
    fill(0, rows, all);
    return constant(leaf, std::move(shape), all);
  }
  std::string name = impl_->unique(tensor_path(leaf));
  impl_->begin_external(name, shape);
  const int64_t block = std::max<int64_t>(1, kStreamBlockBytes / 4 / std::max<int64_t>(1, row_size));
  std::vector<float> buf;
  for (int64_t r = 0; r < rows; r += block) {
    int64_t e = std::min(rows, r + block);
    buf.assign(static_cast<size_t>((e - r) * row_size), 0.0f);
    fill(r, e, buf);
    refuse_nonfinite(name, buf);
    impl_->write_floats(buf);
  }
  return Value{name, std::move(shape)};
}

Value GraphBuilder::scalar(const std::string& leaf, float v) {
  return constant(leaf, {}, std::span<const float>(&v, 1));
}

Value GraphBuilder::elementwise(const char* op, const Value& a, const Value& b, const std::string& leaf) {
  std::string name = impl_->unique(node_path(leaf));
  impl_->add_node(op, name, {a.name, b.name}, name + "_output_0");
  return impl_->record(name + "_output_0", broadcast_shapes(a.shape, b.shape));
}

Value GraphBuilder::unary(const char* op, const Value& a, const std::string& leaf) {
  std::string name = impl_->unique(node_path(leaf));
  impl_->add_node(op, name, {a.name}, name + "_output_0");
  return impl_->record(name + "_output_0", a.shape);
}

Value GraphBuilder::add(const Value& a, const Value& b, const std::string& leaf) {
  return elementwise("Add", a, b, leaf);
}
Value GraphBuilder::sub(const Value& a, const Value& b, const std::string& leaf) {
  return elementwise("Sub", a, b, leaf);
}
Value GraphBuilder::mul(const Value& a, const Value& b, const std::string& leaf) {
  return elementwise("Mul", a, b, leaf);
}
Value GraphBuilder::div(const Value& a, const Value& b, const std::string& leaf) {
  return elementwise("Div", a, b, leaf);
}
Value GraphBuilder::sqrt(const Value& a, const std::string& leaf) { return unary("Sqrt", a, leaf); }
Value GraphBuilder::reciprocal(const Value& a, const std::string& leaf) { return unary("Reciprocal", a, leaf); }
Value GraphBuilder::sigmoid(const Value& a, const std::string& leaf) { return unary("Sigmoid", a, leaf); }
Value GraphBuilder::tanh(const Value& a, const std::string& leaf) { return unary("Tanh", a, leaf); }
Value GraphBuilder::relu(const Value& a, const std::string& leaf) { return unary("Relu", a, leaf); }
Value GraphBuilder::erf(const Value& a, const std::string& leaf) { return unary("Erf", a, leaf); }

Value GraphBuilder::pow(const Value& a, float exponent, const std::string& leaf) {
  Value e = scalar(leaf + "_exponent", exponent);
  return elementwise("Pow", a, e, leaf);
}

Value GraphBuilder::matmul(const Value& a, const Value& b, const std::string& leaf) {
  if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2])
    throw InternalError(node_path(leaf) + ": MatMul of " + shape_string(a.shape) + " and " + shape_string(b.shape));
  std::vector<int64_t> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  std::vector<int64_t> out = broadcast_shapes(batch_a, batch_b);
  out.push_back(a.shape[a.shape.size() - 2]);
  out.push_back(b.shape.back());
  std::string name = impl_->unique(node_path(leaf));
  impl_->add_node("MatMul", name, {a.name, b.name}, name + "_output_0");
  return impl_->record(name + "_output_0", out);
}

Value GraphBuilder::softmax(const Value& a, int64_t axis, const std::string& leaf) {
  std::string name = impl_->unique(node_path(leaf));
  auto* n = impl_->add_node("Softmax", name, {a.name}, name + "_output_0");
  auto* at = n->add_attribute();
  at->set_name("axis");
  at->set_type(onnx::AttributeProto::INT);
  at->set_i(axis);
  return impl_->record(name + "_output_0", a.shape);
}

Value GraphBuilder::reduce_mean(const Value& a, int64_t axis, const std::string& leaf) {
  std::string name = impl_->unique(node_path(leaf));
  auto* n = impl_->add_node("ReduceMean", name, {a.name}, name + "_output_0");
  auto* axes = n->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto::INTS);
  axes->add_ints(axis);
  auto* keep = n->add_attribute();
  keep->set_name("keepdims");
  keep->set_type(onnx::AttributeProto::INT);
  keep->set_i(1);
  std::vector<int64_t> out = a.shape;
  out.at(axis < 0 ? out.size() + axis : axis) = 1;
  return impl_->record(name + "_output_0", out);
}

Value GraphBuilder::layer_normalization(const Value& a, const Value& scale, const Value& bias, float epsilon,
                                        const std::string& leaf) {
  const std::vector<int64_t> last{a.shape.back()};
  if (scale.shape != last || bias.shape != last)
    throw InternalError(node_path(leaf) + ": LayerNormalization of " + shape_string(a.shape) + " with scale " +
                        shape_string(scale.shape) + " and bias " + shape_string(bias.shape));
  std::string name = impl_->unique(node_path(leaf));
  auto* n = impl_->graph->add_node();
  n->set_op_type("LayerNormalization");
  n->set_name(name);
  for (const auto* in : {&a, &scale, &bias}) n->add_input(in->name);
  n->add_output(name + "_output_0");
  auto* axis = n->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(-1);
  auto* eps = n->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  if (!std::isfinite(epsilon) || epsilon < 0)
    throw InternalError(name + ": LayerNormalization epsilon " + std::to_string(epsilon) +
                        " is not a finite number >= 0 (a reading let a bad config value through)");
  eps->set_f(epsilon);
  return impl_->record(name + "_output_0", a.shape);
}

Value GraphBuilder::reshape(const Value& a, std::vector<int64_t> shape, const std::string& leaf) {
  if (numel(shape) != numel(a.shape))
    throw InternalError(node_path(leaf) + ": Reshape " + shape_string(a.shape) + " to " + shape_string(shape));
  std::string name = impl_->unique(node_path(leaf));
  std::string shape_name = impl_->int64_constant(impl_->unique(tensor_path(leaf + "_shape")), shape);
  impl_->add_node("Reshape", name, {a.name, shape_name}, name + "_output_0");
  return impl_->record(name + "_output_0", std::move(shape));
}

Value GraphBuilder::transpose(const Value& a, std::vector<int64_t> perm, const std::string& leaf) {
  if (perm.size() != a.shape.size()) throw InternalError(node_path(leaf) + ": Transpose rank mismatch");
  std::vector<int64_t> out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = a.shape.at(static_cast<size_t>(perm[i]));
  std::string name = impl_->unique(node_path(leaf));
  auto* n = impl_->add_node("Transpose", name, {a.name}, name + "_output_0");
  auto* at = n->add_attribute();
  at->set_name("perm");
  at->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : perm) at->add_ints(p);
  return impl_->record(name + "_output_0", out);
}

Value GraphBuilder::slice(const Value& a, int64_t axis, int64_t start, int64_t end, const std::string& leaf) {
  size_t ax = static_cast<size_t>(axis < 0 ? static_cast<int64_t>(a.shape.size()) + axis : axis);
  if (ax >= a.shape.size() || start < 0 || end > a.shape[ax] || start >= end)
    throw InternalError(node_path(leaf) + ": Slice [" + std::to_string(start) + ", " + std::to_string(end) +
                        ") on axis " + std::to_string(axis) + " of " + shape_string(a.shape));
  std::string name = impl_->unique(node_path(leaf));
  std::string base = tensor_path(leaf);
  std::string starts = impl_->int64_constant(impl_->unique(base + "_starts"), {start});
  std::string ends = impl_->int64_constant(impl_->unique(base + "_ends"), {end});
  std::string axes = impl_->int64_constant(impl_->unique(base + "_axes"), {static_cast<int64_t>(ax)});
  std::string steps = impl_->int64_constant(impl_->unique(base + "_steps"), {1});
  impl_->add_node("Slice", name, {a.name, starts, ends, axes, steps}, name + "_output_0");
  std::vector<int64_t> out = a.shape;
  out[ax] = end - start;
  return impl_->record(name + "_output_0", out);
}

void GraphBuilder::save(const std::filesystem::path& model_path,
                        const std::vector<std::pair<std::string, std::string>>& metadata) {
  impl_->data->close();
  if (model_path.parent_path() != impl_->data_path.parent_path())
    throw InternalError("external data must sit next to the model");
  auto all = metadata;
  all.insert(all.end(), impl_->annotations.begin(), impl_->annotations.end());
  for (const auto& [k, v] : all) {
    auto* p = impl_->model.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  std::ofstream out(model_path, std::ios::binary | std::ios::trunc);
  if (!out || !impl_->model.SerializeToOstream(&out))
    throw BadInput(model_path.string() + ": cannot write the ONNX model");
}

void GraphBuilder::annotate(const std::string& key, const std::string& value) {
  impl_->annotations.emplace_back(key, value);
}

const std::vector<std::pair<std::string, std::string>>& GraphBuilder::annotations() const { return impl_->annotations; }

uint64_t GraphBuilder::external_bytes() const { return impl_->data->size(); }
size_t GraphBuilder::node_count() const { return static_cast<size_t>(impl_->graph->node_size()); }

}  // namespace llm2hef::sdk
