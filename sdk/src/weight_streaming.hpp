// Streams a checkpoint tensor, seen through a WeightView, into its region of
// model.onnx.data as float32, in blocks of kStreamBlockBytes handed to the
// writer without a further copy, converted by the threads of a TaskPool.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "llm2hef/sdk/background_file_writer.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "task_pool.hpp"

namespace llm2hef::sdk {

// Bytes of output converted per block handed to the writer (a band of a
// transposed weight, a run of rows of another). A transposed matrix whose
// output fits one block is gathered whole and emitted as one piece; a larger
// one is read in bands of source rows, each transposed in cache-sized tiles
// into a block that holds the band's columns of every output row, so a
// [128256, 2048] head is read once. The threads of a TaskPool share each
// block (each converts a slice of its source rows), so memory does not grow
// with the number of threads: BackgroundFileWriter::kBlocks blocks, plus the
// source rows being transposed (one block's worth, split among the threads).
// 8 MB: peak RSS stays under 150 MiB on GPT-2 XL (issue 31; with 12 MB blocks
// and 4 MB copy batches it was 165-186 MiB).
inline constexpr int64_t kStreamBlockBytes = 8ll << 20;

struct WeightPlan {
  int64_t src_rows = 0, src_cols = 0;  // the tensor as a 2-D matrix
  bool transpose = false;
  int64_t col_begin = 0, col_end = 0;  // on the (transposed) matrix
  std::vector<int64_t> out_shape;      // 1-D for 1-D sources, else 2-D
};

WeightPlan plan_weight(const TensorInfo& tensor, const WeightView& view);

// Source rows read by one thread, kept from one weight to the next. Fresh
// vectors of tens of MB for every weight cost a page fault and a zero fill
// per page each time (glibc returns blocks that large to the kernel on
// free): a fifth of an export's time on Qwen2.5-0.5B shapes. Values are not
// initialised.
// Pages of their own (mmap), like the writer's blocks: freed scratch goes
// back to the system rather than staying in a thread's malloc arena.
class StreamScratch {
 public:
  StreamScratch() = default;
  StreamScratch(StreamScratch&& o) noexcept : buffer_(o.buffer_), size_(o.size_) { o.buffer_ = nullptr, o.size_ = 0; }
  StreamScratch& operator=(StreamScratch&&) = delete;
  StreamScratch(const StreamScratch&) = delete;
  ~StreamScratch();
  std::span<float> source(size_t n);

 private:
  float* buffer_ = nullptr;
  size_t size_ = 0;
};

// Where stream_weight writes: the output tensor's region starts at byte
// `base` of `out`; `scale` multiplies every value (1: none); `progress` is
// told the tensor's bytes handed to the writer so far.
struct WeightTarget {
  BackgroundFileWriter& out;
  uint64_t base;
  float scale = 1.0f;
  std::string name;  // the initializer, for error messages
  std::function<void(uint64_t done)> progress;
  int64_t block_bytes = kStreamBlockBytes;  // smaller in tests, to cross block boundaries on small tensors
};

// Converts and writes `tensor` seen through `plan`; every source element is
// read and converted once. The bytes written do not depend on pool's thread
// count. `scratch` holds one StreamScratch per pool thread.
void stream_weight(const Checkpoint& ckpt, const TensorInfo& tensor, const WeightPlan& plan, TaskPool& pool,
                   std::vector<StreamScratch>& scratch, const WeightTarget& target);

}  // namespace llm2hef::sdk
