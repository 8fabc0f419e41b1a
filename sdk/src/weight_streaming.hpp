// Streams a checkpoint tensor, seen through a WeightView, as float32 rows of
// the output matrix, holding at most a few blocks of kStreamBlockBytes.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// Working-set budget of one streaming step. A transposed matrix is produced
// in bands of output rows that fit this budget, each band gathered in one
// pass over the source, so a [50257, 1600] tied head takes a handful of
// passes and ~100 MB instead of a full second copy.
inline constexpr int64_t kStreamBlockBytes = 32ll << 20;

struct WeightPlan {
  int64_t src_rows = 0, src_cols = 0;  // the tensor as a 2-D matrix
  bool transpose = false;
  int64_t col_begin = 0, col_end = 0;  // on the (transposed) matrix
  std::vector<int64_t> out_shape;      // 1-D for 1-D sources, else 2-D
};

WeightPlan plan_weight(const TensorInfo& tensor, const WeightView& view);

void stream_weight(const Checkpoint& ckpt, const TensorInfo& tensor, const WeightPlan& plan,
                   const std::function<void(std::span<const float>)>& sink);

}  // namespace llm2hef::sdk
