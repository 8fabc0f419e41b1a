#include "weight_streaming.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

StreamScratch::~StreamScratch() {
  if (buffer_) ::munmap(buffer_, size_ * sizeof(float));
}

std::span<float> StreamScratch::source(size_t n) {
  if (n > size_) {
    if (buffer_) ::munmap(buffer_, size_ * sizeof(float));  // the old block goes before the new one is faulted in
    buffer_ = nullptr, size_ = 0;
    void* p = ::mmap(nullptr, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    buffer_ = static_cast<float*>(p), size_ = n;
  }
  return {buffer_, n};
}

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

namespace {

// dst[j * dst_stride + i] = src[i * stride + j] for i < c, j < cols: a
// [c, cols] block of rows of `stride` floats transposed, in square tiles so
// that both sides stay in cache. Full tiles go through 4x4 register
// transposes where SSE exists (every x86-64): 3x the scalar loop's speed,
// which made transposing a quarter of a Llama export's time.
void transpose_block(const float* src, int64_t stride, int64_t c, int64_t cols, float* dst, int64_t dst_stride) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < c; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t i1 = std::min(c, i0 + kTile), j1 = std::min(cols, j0 + kTile);
#if defined(__SSE__)
      if (i1 - i0 == kTile && j1 - j0 == kTile) {
        for (int64_t i = i0; i < i1; i += 4)
          for (int64_t j = j0; j < j1; j += 4) {
            const float* s = src + i * stride + j;
            __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + stride);
            __m128 r2 = _mm_loadu_ps(s + 2 * stride), r3 = _mm_loadu_ps(s + 3 * stride);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            float* d = dst + j * dst_stride + i;
            _mm_storeu_ps(d, r0);
            _mm_storeu_ps(d + dst_stride, r1);
            _mm_storeu_ps(d + 2 * dst_stride, r2);
            _mm_storeu_ps(d + 3 * dst_stride, r3);
          }
        continue;
      }
#endif
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = j0; j < j1; ++j) dst[j * dst_stride + i] = src[i * stride + j];
    }
}

}  // namespace

namespace {

// Part k of `parts` nearly equal slices of [begin, end).
std::pair<int64_t, int64_t> slice_of(int64_t begin, int64_t end, size_t parts, size_t k) {
  const int64_t n = end - begin, p = static_cast<int64_t>(parts), i = static_cast<int64_t>(k);
  return {begin + n * i / p, begin + n * (i + 1) / p};
}

void scale_values(std::span<float> values, const TensorInfo& t, const WeightTarget& target) {
  if (target.scale == 1.0f) return;
  for (float& v : values) {
    const float product = v * target.scale;
    if (std::isfinite(v) && !std::isfinite(product))
      throw InternalError("weight '" + t.name + "' times " + std::to_string(target.scale) + " overflows float32 in '" +
                          target.name + "': the scale a reading derived from the config is out of range");
    v = product;
  }
}

// One block of `floats` values: its `parts` are filled by the pool's threads
// (fill(block, part, thread)), then it goes to the writer as extents(block).
template <typename Fill, typename Extents>
void hand_block(const WeightTarget& target, TaskPool& pool, size_t floats, size_t parts, const Fill& fill,
                const Extents& extents) {
  const std::span<char> bytes = target.out.acquire_block(floats * sizeof(float));
  float* block = reinterpret_cast<float*>(bytes.data());
  try {
    pool.run(parts, [&](size_t part, unsigned thread) { fill(block, part, thread); });
  } catch (...) {
    target.out.abandon_block();
    throw;
  }
  target.out.submit_block(extents(bytes.data()));
}

// Where rows [first, first + n) of an untransposed weight go, their values
// starting at `rows` (src_cols floats a row): one extent when whole rows are
// written, else each row's column range.
void add_row_extents(std::vector<BackgroundFileWriter::Extent>& x, const char* rows, int64_t first, int64_t n,
                     const WeightPlan& p, const WeightTarget& target) {
  const int64_t width = p.col_end - p.col_begin;
  const auto at = [&](int64_t element) { return target.base + static_cast<uint64_t>(element) * sizeof(float); };
  const auto bytes = [](int64_t values) { return static_cast<size_t>(values) * sizeof(float); };
  if (width == p.src_cols) {
    x.push_back({at(first * width), rows, bytes(n * width)});
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    x.push_back({at((first + i) * width), rows + bytes(i * p.src_cols + p.col_begin), bytes(width)});
}

// Rows [r, e) written straight from the checkpoint's mapping, each of
// `parts` slices checked for NaN and infinity on a pool thread; false (and
// nothing written) when the checkpoint does not store them as float32.
bool write_stored_rows(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, TaskPool& pool,
                       const WeightTarget& target, int64_t r, int64_t e, size_t parts) {
  std::vector<std::span<const char>> slices(parts);
  std::vector<int64_t> first_row(parts);
  const auto release = [&ckpt](const std::vector<std::span<const char>>& lent) {
    for (const auto& s : lent)
      if (!s.empty()) ckpt.release_stored(s);
  };
  try {
    pool.run(parts, [&](size_t part, unsigned) {
      const auto [a, b] = slice_of(r, e, parts, part);
      first_row[part] = a;
      slices[part] = ckpt.stored_f32_rows(t.name, a, b);
    });
  } catch (...) {
    release(slices);  // one slice was refused (a NaN under --refuse-nonfinite): the others go back
    throw;
  }
  for (const auto& s : slices)
    if (s.empty()) {
      release(slices);
      return false;
    }
  std::vector<BackgroundFileWriter::Extent> x;
  for (size_t part = 0; part < parts; ++part) {
    const int64_t n = static_cast<int64_t>(slices[part].size() / sizeof(float)) / p.src_cols;
    add_row_extents(x, slices[part].data(), first_row[part], n, p, target);
  }
  try {
    target.out.submit_borrowed(std::move(x), [release, slices] { release(slices); });
  } catch (...) {
    release(slices);  // not handed over (the file is lost already)
    throw;
  }
  return true;
}

// What has been handed to the writer so far, reported to the target's
// progress callback after each block.
class HandedBytes {
 public:
  explicit HandedBytes(const WeightTarget& target) : target_(target) {}
  void add(int64_t values) {
    done_ += static_cast<uint64_t>(values) * sizeof(float);
    if (target_.progress) target_.progress(done_);
  }

 private:
  const WeightTarget& target_;
  uint64_t done_ = 0;
};

size_t count_of(int64_t n) { return static_cast<size_t>(n); }

// A vector is small: read whole, emit the column range.
void stream_vector(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, const WeightTarget& target,
                   HandedBytes& handed) {
  const int64_t width = p.col_end - p.col_begin;
  std::vector<float> v = ckpt.read(t.name);
  const std::span<float> s = std::span<float>(v).subspan(count_of(p.col_begin), count_of(width));
  scale_values(s, t, target);
  target.out.write_at(target.base, {reinterpret_cast<const char*>(s.data()), s.size_bytes()});
  handed.add(width);
}

// Runs of source rows. Float32 rows stored in the checkpoint's mapping
// (safetensors F32, unscaled) are written from there, checked but not
// copied; others are converted straight into a block. A column range is
// written row by row (the writer joins rows that continue each other into
// one call).
void stream_rows(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, TaskPool& pool,
                 const WeightTarget& target, int64_t block_floats, HandedBytes& handed) {
  const int64_t width = p.col_end - p.col_begin;
  const int64_t rows_per_block = std::max<int64_t>(1, block_floats / std::max<int64_t>(1, p.src_cols));
  const bool may_borrow = target.scale == 1.0f && t.dtype == DType::f32;
  for (int64_t r = 0; r < p.src_rows; r += rows_per_block) {
    const int64_t e = std::min(p.src_rows, r + rows_per_block), n = e - r;
    const size_t parts = std::min<size_t>(pool.threads(), count_of(n));
    if (may_borrow && write_stored_rows(ckpt, t, p, pool, target, r, e, parts)) {
      handed.add(n * width);
      continue;
    }
    hand_block(
        target, pool, count_of(n * p.src_cols), parts,
        [&](float* block, size_t part, unsigned) {
          const auto [a, b] = slice_of(r, e, parts, part);
          const std::span<float> rows(block + (a - r) * p.src_cols, count_of((b - a) * p.src_cols));
          ckpt.read_rows(t.name, a, b, rows);
          if (width == p.src_cols) {
            scale_values(rows, t, target);
          } else {
            for (int64_t i = 0; i < b - a; ++i)
              scale_values(rows.subspan(count_of(i * p.src_cols + p.col_begin), count_of(width)), t, target);
          }
        },
        [&](const char* block) {
          std::vector<BackgroundFileWriter::Extent> x;
          add_row_extents(x, block, r, n, p, target);
          return x;
        });
    handed.add(n * width);
  }
}

// Source rows [a, b) transposed into the block's columns starting at `column`
// (c columns a row). Float32 stored aligned in the mapping is transposed from
// there (no copy into scratch first); its pages go once transposed.
void transpose_rows_into(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, const WeightTarget& target,
                         StreamScratch& scratch, int64_t a, int64_t b, float* column, int64_t c) {
  const int64_t out_rows = p.src_cols;
  if (target.scale == 1.0f && t.dtype == DType::f32) {
    const std::span<const char> stored = ckpt.stored_f32_rows(t.name, a, b);
    if (!stored.empty() && reinterpret_cast<uintptr_t>(stored.data()) % alignof(float) == 0) {
      transpose_block(reinterpret_cast<const float*>(stored.data()), p.src_cols, b - a, out_rows, column, c);
      ckpt.release_stored(stored);
      return;
    }
    // Unaligned (a header of odd length): copied below instead.
    if (!stored.empty()) ckpt.release_stored(stored);
  }
  const std::span<float> src = scratch.source(count_of((b - a) * p.src_cols));
  ckpt.read_rows(t.name, a, b, src);
  scale_values(src, t, target);
  transpose_block(src.data(), p.src_cols, b - a, out_rows, column, c);
}

// Output row j is source column j; output columns are source rows
// [col_begin, col_end). Each band of source rows is read once and transposed
// into a block holding the band's columns of every output row (the whole
// output when it fits one block); each thread reads and transposes a slice of
// the band's rows into its own columns of the block.
void stream_transposed(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, TaskPool& pool,
                       std::vector<StreamScratch>& scratch, const WeightTarget& target, int64_t block_floats,
                       HandedBytes& handed) {
  const int64_t width = p.col_end - p.col_begin;
  const int64_t out_rows = p.src_cols;
  const auto at = [&](int64_t element) { return target.base + static_cast<uint64_t>(element) * sizeof(float); };
  const bool whole = out_rows * width <= block_floats;
  const int64_t band_rows = whole ? width : std::max<int64_t>(1, block_floats / out_rows);
  for (int64_t r = p.col_begin; r < p.col_end; r += band_rows) {
    const int64_t e = std::min(p.col_end, r + band_rows), c = e - r;
    const size_t parts = std::min<size_t>(pool.threads(), count_of(c));
    hand_block(
        target, pool, count_of(out_rows * c), parts,
        [&](float* block, size_t part, unsigned thread) {
          const auto [a, b] = slice_of(r, e, parts, part);
          transpose_rows_into(ckpt, t, p, target, scratch[thread], a, b, block + (a - r), c);
        },
        [&](const char* block) {
          std::vector<BackgroundFileWriter::Extent> x;
          if (c == width) {  // the whole output
            x.push_back({target.base, block, count_of(out_rows * c) * sizeof(float)});
          } else {
            x.reserve(count_of(out_rows));
            for (int64_t j = 0; j < out_rows; ++j)
              x.push_back({at(j * width + (r - p.col_begin)), block + count_of(j * c) * sizeof(float),
                           count_of(c) * sizeof(float)});
          }
          return x;
        });
    handed.add(out_rows * c);
  }
}

}  // namespace

void stream_weight(const Checkpoint& ckpt, const TensorInfo& t, const WeightPlan& p, TaskPool& pool,
                   std::vector<StreamScratch>& scratch, const WeightTarget& target) {
  HandedBytes handed(target);
  if (t.shape.size() == 1) return stream_vector(ckpt, t, p, target, handed);
  const int64_t block_floats = std::max<int64_t>(1, target.block_bytes / 4);
  if (scratch.size() < pool.threads()) scratch.resize(pool.threads());
  if (!p.transpose) return stream_rows(ckpt, t, p, pool, target, block_floats, handed);
  stream_transposed(ckpt, t, p, pool, scratch, target, block_floats, handed);
}

}  // namespace llm2hef::sdk
