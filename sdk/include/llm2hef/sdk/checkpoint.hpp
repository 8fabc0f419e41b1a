// What an adapter sees of a Hugging Face checkpoint folder.
//
// The core implements this over memory-mapped safetensors (single file or
// shards). Adapters only read: tensor metadata, and rows of a tensor converted
// to float32, so that weights can be streamed block by block and peak memory
// stays near one block, whatever the model size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

// Only these three are read as float32; any other valid safetensors dtype is
// `other` (its header string is kept in TensorInfo::dtype_text) and reading it
// is refused with the tensor's name.
enum class DType { f32, f16, bf16, other };

const char* dtype_name(DType d);
size_t dtype_size(DType d);

struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  std::string dtype_text = "F32";  // as written in the safetensors header
  std::vector<int64_t> shape;
  std::filesystem::path file;  // the safetensors file that holds it

  int64_t numel() const;
  // Rows are slices along dimension 0; a row holds numel()/shape[0] values.
  int64_t rows() const { return shape.empty() ? 1 : shape[0]; }
  int64_t row_size() const;
};

class Checkpoint {
 public:
  virtual ~Checkpoint() = default;

  virtual const std::filesystem::path& dir() const = 0;
  virtual const JsonFile& config() const = 0;             // config.json (required)
  virtual const JsonFile& generation_config() const = 0;  // empty when absent
  virtual const JsonFile& tokenizer_config() const = 0;   // empty when absent
  // tokenizer.json path, or empty path when the folder has none.
  virtual std::filesystem::path tokenizer_json() const = 0;

  virtual bool has(std::string_view tensor) const = 0;
  // Throws BadInput naming the checkpoint folder and the tensor when absent.
  virtual const TensorInfo& info(std::string_view tensor) const = 0;
  virtual std::vector<std::string> tensor_names() const = 0;

  // Copies rows [row_begin, row_end) of `tensor`, converted to float32, into
  // `out` (size (row_end-row_begin)*row_size). Pages of the mapping that were
  // read are released afterwards so that streaming a large tensor does not
  // grow the resident set. Called from several threads at once (the graph
  // builder converts slices of a block of rows in parallel): an
  // implementation must be safe for that.
  virtual void read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end, std::span<float> out) const = 0;

  // Rows [row_begin, row_end) of `tensor` as the file stores them, when it
  // stores them as little-endian float32 in a mapping that lives as long as
  // the checkpoint: the export then writes them to model.onnx.data straight
  // from the mapping instead of copying them into a block first (issue 31:
  // GPT-2's F32 weights went mapping -> block -> kernel). The rows are
  // checked for NaN and infinity as read_rows checks them. Empty when the
  // tensor is stored otherwise (read_rows is then the way); the default.
  // Safe to call from several threads at once.
  virtual std::span<const char> stored_f32_rows(std::string_view tensor, int64_t row_begin, int64_t row_end) const;
  // Drops the mapped pages of `rows` (a span stored_f32_rows returned) once
  // they have been written, as read_rows drops the pages it read, so that
  // streaming a large tensor does not grow the resident set. Called from
  // the writer thread; the default does nothing.
  virtual void release_stored(std::span<const char> rows) const;

  // Whole tensor as float32 (for small tensors: norms, biases).
  std::vector<float> read(std::string_view tensor) const;
  // Throws BadInput unless `tensor` exists with exactly `shape`.
  const TensorInfo& expect(std::string_view tensor, const std::vector<int64_t>& shape) const;
};

std::string shape_string(const std::vector<int64_t>& shape);

}  // namespace llm2hef::sdk
