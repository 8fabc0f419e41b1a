// Safetensors files: a strict header parser and a read-only memory mapping.
//
// Layout: u64 little-endian header length N, N bytes of JSON mapping tensor
// name -> {dtype, shape, data_offsets}, then the data section; offsets are
// relative to the start of the data section. Nothing in the header is trusted
// until it has been checked against the file size, so the parser doubles as a
// fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/core/io/mapped_file.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// Headers larger than this are refused before any allocation: a real header
// is a few hundred kB even for models with thousands of tensors.
inline constexpr uint64_t kMaxSafetensorsHeader = 100ull * 1000 * 1000;

struct SafetensorsEntry {
  std::string name;
  sdk::DType dtype = sdk::DType::other;  // f32/f16/bf16, or other
  std::string dtype_text;                // as written: "F32", "I64", "F8_E4M3", ...
  size_t element_size = 0;               // bytes per element of dtype_text
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // absolute byte offset in the file
  uint64_t end = 0;    // one past the last byte

  uint64_t numel() const;
};

struct SafetensorsHeader {
  uint64_t header_size = 0;               // N
  uint64_t data_start = 0;                // 8 + N: where the data section starts
  std::vector<SafetensorsEntry> entries;  // ordered by begin offset
};

// Parses and validates the header. `bytes` is the start of the file: at least
// 8 + N bytes of it, or all of it; `file_size` is the size of the whole file,
// against which every data range is checked. Throws BadInput
// "<file_label>: ..." (naming the tensor where one is involved) on any
// malformation; never reads outside `bytes`.
SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> bytes, uint64_t file_size,
                                           const std::string& file_label);

// Exact conversions (every half/bfloat16 value, subnormals, infinities and NaN
// payloads included, has an exact float32 image).
float f16_to_f32(uint16_t bits);
float bf16_to_f32(uint16_t bits);

// Converts `out.size()` little-endian values of `dtype` (f32, f16 or bf16)
// starting at `src` to float32. `src` needs no alignment. Returns the index
// in `out` of the first NaN or infinity, or out.size() when all are finite
// (found in the same pass, from the source bits).
size_t convert_to_f32(sdk::DType dtype, const uint8_t* src, std::span<float> out);

// The index of the first NaN or infinity among `n` little-endian float32
// values at `src` (no alignment needed), or n when all are finite: the check
// convert_to_f32 makes, for values written without being copied.
size_t first_nonfinite_f32(const uint8_t* src, size_t n);

// A safetensors file opened read-only and mapped whole. Reading rows copies
// them out of the mapping and then drops the pages it touched, so streaming
// a multi-GB file keeps the resident set at about one block.
class SafetensorsFile {
 public:
  // Throws BadInput naming `path` if it cannot be opened or is malformed.
  explicit SafetensorsFile(const std::filesystem::path& path);
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return file_.size(); }
  const SafetensorsHeader& header() const { return header_; }
  const std::vector<SafetensorsEntry>& entries() const { return header_.entries; }
  // nullptr when the file has no tensor of that name.
  const SafetensorsEntry* find(std::string_view name) const;

  // Rows [row_begin, row_end) along dimension 0 as float32 into `out`, whose
  // size must be (row_end - row_begin) * row size. Throws Unsupported for a
  // dtype other than F32/F16/BF16 and InternalError for a bad row range or
  // output size (a caller's bug, not the file's). Returns the index in
  // `out` of the first NaN or infinity, or out.size() when there is none.
  size_t read_rows(const SafetensorsEntry& entry, int64_t row_begin, int64_t row_end, std::span<float> out) const;

  // Rows [row_begin, row_end) of an F32 tensor as stored (empty for another
  // dtype), with `first_bad` set to the index of the first NaN or infinity
  // among their values, or to their count when there is none. The pages
  // stay mapped until release_covering() or destruction.
  std::span<const char> f32_rows(const SafetensorsEntry& entry, int64_t row_begin, int64_t row_end,
                                 size_t& first_bad) const;
  // True when `bytes` lie in this file's mapping.
  bool maps(std::span<const char> bytes) const;
  // Drops the mapped pages of `bytes` (which maps()), and those a fault on
  // them may have mapped around them.
  void release_lent(std::span<const char> bytes) const;

  // The raw bytes of a tensor, for callers that copy data unconverted. The
  // pages stay mapped until release() or destruction.
  std::span<const uint8_t> raw(const SafetensorsEntry& entry) const;
  // Drops the mapped pages lying wholly inside [begin, end) of the file.
  void release(uint64_t begin, uint64_t end) const;

 private:
  void release_with_margin(uint64_t begin, uint64_t end) const;

  std::filesystem::path path_;
  MappedFile file_;
  SafetensorsHeader header_;
  std::map<std::string, size_t, std::less<>> index_;  // name -> entries() position
};

}  // namespace llm2hef::core
