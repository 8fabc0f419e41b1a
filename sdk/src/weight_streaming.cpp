#include "weight_streaming.hpp"

#include <algorithm>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

WeightPlan plan_weight(const TensorInfo& t, const WeightView& view) {
  WeightPlan p;
  if (t.shape.empty() || t.shape.size() > 2)
    throw BadInput(t.file.string() + ": tensor '" + t.name + "' has shape " + shape_string(t.shape) +
                   ", expected a vector or a matrix");
  const bool is_vector = t.shape.size() == 1;
  p.src_rows = is_vector ? 1 : t.shape[0];
  p.src_cols = is_vector ? t.shape[0] : t.shape[1];
  p.transpose = view.transpose;
  if (is_vector && view.transpose) throw InternalError("cannot transpose vector '" + t.name + "'");
  const int64_t cols = p.transpose ? p.src_rows : p.src_cols;
  p.col_begin = view.col_begin;
  p.col_end = view.col_end < 0 ? cols : view.col_end;
  if (p.col_begin < 0 || p.col_end > cols || p.col_begin >= p.col_end)
    throw BadInput(t.file.string() + ": tensor '" + t.name + "' with shape " + shape_string(t.shape) +
                   " has no columns [" + std::to_string(p.col_begin) + ", " + std::to_string(p.col_end) + ")");
  const int64_t width = p.col_end - p.col_begin;
  const int64_t rows = p.transpose ? p.src_cols : p.src_rows;
  p.out_shape = is_vector ? std::vector<int64_t>{width} : std::vector<int64_t>{rows, width};
  return p;
}

void stream_weight(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p,
                   const std::function<void(std::span<const float>)>& sink) {
  const int64_t width = p.col_end - p.col_begin;
  if (t.shape.size() == 1) {  // vectors are small: read whole, emit the column range
    const std::vector<float> v = ckpt.read(t.name);
    sink(std::span<const float>(v).subspan(static_cast<size_t>(p.col_begin), static_cast<size_t>(width)));
    return;
  }
  // Source rows per read, bounded by the block budget.
  const int64_t src_chunk = std::max<int64_t>(1, kStreamBlockBytes / 4 / std::max<int64_t>(1, p.src_cols));
  std::vector<float> src;

  if (!p.transpose) {
    std::vector<float> out;
    for (int64_t r = 0; r < p.src_rows; r += src_chunk) {
      const int64_t e = std::min(p.src_rows, r + src_chunk);
      src.resize(static_cast<size_t>((e - r) * p.src_cols));
      ckpt.read_rows(t.name, r, e, src);
      if (width == p.src_cols) {
        sink(src);
        continue;
      }
      out.resize(static_cast<size_t>((e - r) * width));
      for (int64_t i = 0; i < e - r; ++i)
        std::copy_n(src.begin() + i * p.src_cols + p.col_begin, width, out.begin() + i * width);
      sink(out);
    }
    return;
  }

  // Output row j is source column j; output columns are source rows
  // [col_begin, col_end). Gather bands of output rows, one source pass each.
  const int64_t out_rows = p.src_cols;
  const int64_t band = std::max<int64_t>(1, kStreamBlockBytes / 4 / std::max<int64_t>(1, width));
  std::vector<float> out;
  for (int64_t j0 = 0; j0 < out_rows; j0 += band) {
    const int64_t j1 = std::min(out_rows, j0 + band);
    out.assign(static_cast<size_t>((j1 - j0) * width), 0.0f);
    for (int64_t r = p.col_begin; r < p.col_end; r += src_chunk) {
      const int64_t e = std::min(p.col_end, r + src_chunk);
      src.resize(static_cast<size_t>((e - r) * p.src_cols));
      ckpt.read_rows(t.name, r, e, src);
      for (int64_t i = 0; i < e - r; ++i) {
        const float* row = src.data() + i * p.src_cols;
        for (int64_t j = j0; j < j1; ++j) out[static_cast<size_t>((j - j0) * width + (r - p.col_begin) + i)] = row[j];
      }
    }
    sink(out);
  }
}

}  // namespace llm2hef::sdk
