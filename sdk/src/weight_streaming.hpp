// Streams a checkpoint tensor, seen through a WeightView, as float32 pieces
// of the output matrix, each with its place (in elements from the start of
// the output), holding at most a few blocks of kStreamBlockBytes. Every
// source element is read and converted once, transposed or not.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// Working-set budget of one streaming step. A transposed matrix that fits it
// is gathered whole and emitted as one piece; a larger one is read in chunks
// of source rows, each chunk transposed in cache-sized tiles and emitted as
// one piece per output row (the chunk's columns of that row), so a
// [128256, 2048] head is read once, in 16 MB chunks, not once per band.
// 16 MB rather than 32: the two scratch buffers are kept for the whole
// export (see StreamScratch), and peak RSS stays under 150 MiB.
inline constexpr int64_t kStreamBlockBytes = 16ll << 20;

struct WeightPlan {
  int64_t src_rows = 0, src_cols = 0;  // the tensor as a 2-D matrix
  bool transpose = false;
  int64_t col_begin = 0, col_end = 0;  // on the (transposed) matrix
  std::vector<int64_t> out_shape;      // 1-D for 1-D sources, else 2-D
};

WeightPlan plan_weight(const TensorInfo& tensor, const WeightView& view);

// Buffers reused from one weight to the next. Fresh vectors of tens of MB
// for every weight cost a page fault and a zero fill per page each time
// (glibc returns blocks that large to the kernel on free): a fifth of an
// export's time on Qwen2.5-0.5B shapes. Values are not initialised.
// Two buffers: the rows read, and what is made of them (a column range, a
// transposed chunk or a whole transposed matrix: never two at once).
class StreamScratch {
 public:
  std::span<float> source(size_t n) { return grow(source_, source_size_, n); }
  std::span<float> staging(size_t n) { return grow(staging_, staging_size_, n); }

 private:
  static std::span<float> grow(std::unique_ptr<float[]>& buffer, size_t& size, size_t n) {
    if (n > size) {
      buffer.reset();  // the old block goes before the new one is faulted in
      buffer.reset(new float[n]);
      size = n;
    }
    return {buffer.get(), n};
  }
  std::unique_ptr<float[]> source_, staging_;
  size_t source_size_ = 0, staging_size_ = 0;
};

// `sink(offset, values)`: values[k] is output element offset + k (row-major).
// Non-transposed pieces come in order; transposed ones may not.
using WeightSink = std::function<void(uint64_t offset, std::span<const float> values)>;

void stream_weight(const Checkpoint& ckpt, const TensorInfo& tensor, const WeightPlan& plan, StreamScratch& scratch,
                   const WeightSink& sink);

}  // namespace llm2hef::sdk
