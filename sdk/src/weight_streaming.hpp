// Streams a checkpoint tensor, seen through a WeightView, as float32 pieces
// of the output matrix, each with its place (in elements from the start of
// the output), holding at most a few blocks of kStreamBlockBytes. Every
// source element is read and converted once, transposed or not.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// Working-set budget of one streaming step. A transposed matrix that fits it
// is gathered whole and emitted as one piece; a larger one is read in chunks
// of source rows, each chunk transposed in cache-sized tiles and emitted as
// one piece per output row (the chunk's columns of that row), so a
// [128256, 2048] head is read once, in ~100 MB, not once per band.
inline constexpr int64_t kStreamBlockBytes = 32ll << 20;

struct WeightPlan {
  int64_t src_rows = 0, src_cols = 0;  // the tensor as a 2-D matrix
  bool transpose = false;
  int64_t col_begin = 0, col_end = 0;  // on the (transposed) matrix
  std::vector<int64_t> out_shape;      // 1-D for 1-D sources, else 2-D
};

WeightPlan plan_weight(const TensorInfo& tensor, const WeightView& view);

// `sink(offset, values)`: values[k] is output element offset + k (row-major).
// Non-transposed pieces come in order; transposed ones may not.
using WeightSink = std::function<void(uint64_t offset, std::span<const float> values)>;

void stream_weight(const Checkpoint& ckpt, const TensorInfo& tensor, const WeightPlan& plan, const WeightSink& sink);

}  // namespace llm2hef::sdk
