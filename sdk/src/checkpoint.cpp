#include "llm2hef/sdk/checkpoint.hpp"

#include <cmath>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::f32: return "F32";
    case DType::f16: return "F16";
    case DType::bf16: return "BF16";
    case DType::other: return "other";
  }
  return "?";
}

size_t dtype_size(DType d) { return d == DType::f32 ? 4 : d == DType::other ? 0 : 2; }

int64_t TensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorInfo::row_size() const {
  if (shape.empty()) return 1;
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::span<const char> Checkpoint::stored_f32_rows(std::string_view, int64_t, int64_t) const { return {}; }

void Checkpoint::release_stored(std::span<const char>) const {}

std::vector<float> Checkpoint::read(std::string_view tensor) const {
  const TensorInfo& ti = info(tensor);
  std::vector<float> out(static_cast<size_t>(ti.numel()));
  read_rows(tensor, 0, ti.rows(), out);
  // A tensor read whole is folded into the graph's arithmetic (Gemma's
  // 1 + w, QK-norm segments): a NaN there is the checkpoint's, and bad
  // input, not a config value the graph builder should have seen refused.
  for (size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i]))
      throw BadInput(ti.file.string() + ": tensor '" + ti.name + "' holds " +
                     (std::isnan(out[i]) ? "NaN" : "an infinity") + " at element " + std::to_string(i) +
                     "; it is folded into a graph constant, where a non-finite weight cannot be carried as the "
                     "streamed weights are (nonfinite_weights): fix the checkpoint");
  return out;
}

const TensorInfo& Checkpoint::expect(std::string_view tensor, const std::vector<int64_t>& shape) const {
  const TensorInfo& ti = info(tensor);
  if (ti.shape != shape)
    throw BadInput(ti.file.string() + ": tensor '" + ti.name + "' has shape " + shape_string(ti.shape) + ", expected " +
                   shape_string(shape) + " from config.json");
  return ti;
}

}  // namespace llm2hef::sdk
