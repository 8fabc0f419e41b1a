// NumPy .npy / .npz files: what the DFC driver passes to
// add_external_resources and what the tests feed onnxruntime.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/background_file_writer.hpp"

namespace llm2hef::core {

enum class NpyType { f32, i64 };

// Header bytes of a version-1.0 .npy file (little-endian, C order).
std::string npy_header(NpyType type, const std::vector<int64_t>& shape);
// The same for any numpy type string ("<f4", "<f2", "|u1", ...).
std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape);

// Streams a float32 array to disk row block by row block; the bytes are
// written on a background thread while the caller produces the next block.
class NpyWriter {
 public:
  NpyWriter(const std::filesystem::path& path, const std::vector<int64_t>& shape,
            sdk::Writeback writeback = sdk::Writeback::deferred);
  void append(std::span<const float> values);
  // `values` more values, put by fill() straight into a block the writer
  // then writes from (no copy in between).
  void append_block(size_t values, const std::function<void(std::span<float>)>& fill);
  void finish();  // checks the element count

 private:
  std::filesystem::path path_;
  sdk::BackgroundFileWriter out_;
  int64_t expected_ = 0, written_ = 0;
};

void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, std::span<const float> values);

// A float32 (or int64) .npy opened for reading rows without loading it.
class NpyReader {
 public:
  explicit NpyReader(const std::filesystem::path& path);
  const std::vector<int64_t>& shape() const { return shape_; }
  NpyType type() const { return type_; }
  // Rows along dimension 0, as float32 (f32 files only).
  void read_rows(int64_t begin, int64_t end, std::span<float> out);
  std::vector<float> read_all();

 private:
  // Exactly `n` bytes at `offset`; BadInput when the file ends first.
  void read_at(uint64_t offset, void* out, size_t n, const char* what) const;

  std::filesystem::path path_;
  RegularFile file_;  // checked on the descriptor: a FIFO or device is refused, never read
  std::vector<int64_t> shape_;
  NpyType type_ = NpyType::f32;
  uint64_t data_offset_ = 0;
  int64_t row_size_ = 1;
};

// An uncompressed .npz (zip of .npy members), written atomically.
struct NpzMember {
  std::string name;  // without .npy
  NpyType type;
  std::vector<int64_t> shape;
  std::string bytes;  // raw little-endian values
};
NpzMember npz_f32(std::string name, std::vector<int64_t> shape, std::span<const float> values);
NpzMember npz_i64(std::string name, std::vector<int64_t> shape, std::span<const int64_t> values);
// An existing file at `path` is replaced only when `replace` is true.
void write_npz(const std::filesystem::path& path, const std::vector<NpzMember>& members, bool replace);

}  // namespace llm2hef::core
