// Builds the Hailo-shaped ONNX graph: static shapes, hierarchical node names,
// weights streamed into one external-data file.
//
// Every value carries its static shape, computed here op by op; the builder
// records it as value_info so that the DFC parser and `lint` see a fully
// shaped graph, and a shape bug is caught by onnx's checker at export time.
// Names follow the scope stack: inside scope("model")/scope("layers.3")/
// scope("attn") a MatMul is "/model/layers.3/attn/MatMul" and its weight
// initializer "model.layers.3.attn.<leaf>", so two exports diff layer by layer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "llm2hef/sdk/background_file_writer.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::sdk {

struct Value {
  std::string name;
  std::vector<int64_t> shape;
  int64_t dim(int i) const { return shape.at(i < 0 ? shape.size() + i : i); }
};

// A view of a checkpoint tensor as a 2-D matrix [rows, row_size] (a 1-D
// tensor is one row): optionally transposed, then restricted to a column
// range. Covers HF's [out, in] linears (transpose), GPT-2's fused c_attn
// (column ranges) and tied heads (transposed embedding).
struct WeightView {
  bool transpose = false;
  int64_t col_begin = 0;
  int64_t col_end = -1;  // -1: to the end
};

// Fills rows [begin, end) of a generated constant (row-major) into `out`.
using RowFiller = std::function<void(int64_t row_begin, int64_t row_end, std::span<float> out)>;

class GraphBuilder {
 public:
  // Weights larger than `inline_limit_bytes` go to `data_path` (external data);
  // `on_bytes` is told how many weight bytes were written so far (progress);
  // `writeback` says when the data file's bytes go to the disk (as_written
  // when the output will be fsynced); `threads` (>= 1, counting the caller)
  // convert the weights, each block shared among them: the bytes written
  // are the same whatever their number, and so is the memory used.
  GraphBuilder(std::string graph_name, std::filesystem::path data_path, std::function<void(uint64_t)> on_bytes = {},
               Writeback writeback = Writeback::deferred, unsigned threads = 1);
  ~GraphBuilder();
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // ---- naming ----
  class Scope {
   public:
    explicit Scope(GraphBuilder& g) : g_(&g) {}
    Scope(Scope&& o) noexcept : g_(o.g_) { o.g_ = nullptr; }
    Scope(const Scope&) = delete;
    ~Scope();

   private:
    GraphBuilder* g_;
  };
  [[nodiscard]] Scope scope(const std::string& part);
  std::string node_path(const std::string& leaf) const;    // "/model/layers.3/attn/MatMul"
  std::string tensor_path(const std::string& leaf) const;  // "model.layers.3.attn.leaf"

  // ---- graph inputs and outputs ----
  Value input(const std::string& name, std::vector<int64_t> shape);
  // Makes `v` a graph output named `name` (renames the producing node's output).
  void output(const Value& v, const std::string& name);

  // ---- constants ----
  // A checkpoint tensor (through `view`), streamed block by block.
  Value weight(const std::string& leaf, const Checkpoint& ckpt, const std::string& tensor, const WeightView& view = {});
  // The same, every value multiplied by `scale` in float32 as it streams
  // (scalar multipliers folded into a weight: families/scalar_multipliers.hpp).
  Value scaled_weight(const std::string& leaf, const Checkpoint& ckpt, const std::string& tensor,
                      const WeightView& view, float scale);
  // A computed constant, given whole.
  Value constant(const std::string& leaf, std::vector<int64_t> shape, std::span<const float> data);
  // A computed constant, generated row by row: a row is the last axis, the
  // rows every index of the others in row-major order (a matrix's rows).
  Value constant_rows(const std::string& leaf, std::vector<int64_t> shape, const RowFiller& fill);
  Value scalar(const std::string& leaf, float v);

  // ---- ops (opset 17); output shapes computed and checked here ----
  Value matmul(const Value& a, const Value& b, const std::string& leaf = "MatMul");
  Value add(const Value& a, const Value& b, const std::string& leaf = "Add");
  Value sub(const Value& a, const Value& b, const std::string& leaf = "Sub");
  Value mul(const Value& a, const Value& b, const std::string& leaf = "Mul");
  Value div(const Value& a, const Value& b, const std::string& leaf = "Div");
  Value pow(const Value& a, float exponent, const std::string& leaf = "Pow");
  Value sqrt(const Value& a, const std::string& leaf = "Sqrt");
  Value reciprocal(const Value& a, const std::string& leaf = "Reciprocal");
  Value sigmoid(const Value& a, const std::string& leaf = "Sigmoid");
  Value tanh(const Value& a, const std::string& leaf = "Tanh");
  Value relu(const Value& a, const std::string& leaf = "Relu");
  Value erf(const Value& a, const std::string& leaf = "Erf");
  Value softmax(const Value& a, int64_t axis, const std::string& leaf = "Softmax");
  Value reduce_mean(const Value& a, int64_t axis, const std::string& leaf = "ReduceMean");
  // LayerNormalization over the last axis (opset 17), scale and bias [last dim].
  Value layer_normalization(const Value& a, const Value& scale, const Value& bias, float epsilon,
                            const std::string& leaf = "LayerNormalization");
  Value reshape(const Value& a, std::vector<int64_t> shape, const std::string& leaf = "Reshape");
  Value transpose(const Value& a, std::vector<int64_t> perm, const std::string& leaf = "Transpose");
  Value slice(const Value& a, int64_t axis, int64_t start, int64_t end, const std::string& leaf = "Slice");

  // ---- annotations: facts found while building (e.g. a fit error), kept in
  // the model's metadata and in manifest.json ----
  void annotate(const std::string& key, const std::string& value);
  const std::vector<std::pair<std::string, std::string>>& annotations() const;

  // ---- results ----
  // Writes the model (graph + metadata) to `model_path`; the external data
  // file is finished and closed. The data file must sit next to the model.
  void save(const std::filesystem::path& model_path, const std::vector<std::pair<std::string, std::string>>& metadata);
  uint64_t external_bytes() const;
  size_t node_count() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Value elementwise(const char* op, const Value& a, const Value& b, const std::string& leaf);
  Value unary(const char* op, const Value& a, const std::string& leaf);
};

// Shape of numpy-style broadcasting; throws InternalError on mismatch.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);

}  // namespace llm2hef::sdk
