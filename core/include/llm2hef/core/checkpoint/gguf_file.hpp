// GGUF files (llama.cpp, Ollama, LM Studio): a strict header parser and a
// read-only memory mapping.
//
// Layout (ggml-org/ggml docs/gguf.md, "File Structure"): magic "GGUF", u32
// version, u64 tensor count, u64 metadata key-value count, the key-value
// pairs, the tensor infos, padding to `general.alignment` (default 32), then
// the tensor data; every tensor's offset is relative to the start of the
// data section and a multiple of the alignment. All integers are
// little-endian. Nothing read from the header is trusted until checked
// against the bytes that remain, so the parser doubles as a fuzz target.
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

#include <nlohmann/json.hpp>
#include "llm2hef/core/io/mapped_file.hpp"

namespace llm2hef::core {

// A ggml tensor type (ggml.h `enum ggml_type`; gguf-py constants.py
// GGMLQuantizationType and GGML_QUANT_SIZES): `block_size` values are stored
// in `type_size` bytes. `dequantized` says whether llm2hef reads it.
struct GgmlType {
  uint32_t id;
  const char* name;
  uint32_t block_size;
  uint32_t type_size;
  bool dequantized;
};
// nullptr for an id that no ggml release defines.
const GgmlType* find_ggml_type(uint32_t id);
// "F16, BF16, Q8_0, ..." : the types llm2hef dequantizes, for messages.
std::string dequantized_type_names();

// Limits on what a header may declare, far above any real file (a 262k-token
// vocabulary with its merges is ~10 MB of metadata and ~1M array elements)
// and far below what exhausts memory as a JSON DOM.
inline constexpr uint64_t kMaxGgufArrayElements = 16ull << 20;   // one array
inline constexpr uint64_t kMaxGgufMetadataValues = 64ull << 20;  // all values together
inline constexpr uint32_t kMaxGgufArrayDepth = 8;                // arrays of arrays of ...
inline constexpr uint32_t kMaxGgufDims = 4;                      // GGML_MAX_DIMS
inline constexpr uint64_t kMaxGgufTensorName = 64;               // GGML_MAX_NAME, gguf.md "tensor_info_t"

struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> ne;  // as stored: ne[0] is the contiguous (innermost) dimension
  const GgmlType* type = nullptr;
  uint64_t offset = 0;  // as written, relative to the data section
  uint64_t begin = 0;   // absolute byte range in the file
  uint64_t end = 0;

  uint64_t numel() const;
  // The shape as PyTorch / Hugging Face write it: ne reversed.
  std::vector<int64_t> torch_shape() const;
};

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_start = 0;
  // Every key-value pair in file order: integers as JSON integers, FLOAT32 /
  // FLOAT64 as numbers (float32 widened exactly), BOOL as booleans, strings
  // as strings (bytes as written; GGUF says UTF-8 but does not guarantee it),
  // arrays as JSON arrays (nested arrays nested).
  nlohmann::ordered_json metadata;
  // The GGUF value type of each key, for messages ("uint32", "array of string").
  std::map<std::string, std::string, std::less<>> metadata_types;
  std::vector<GgufTensorInfo> tensors;  // in file order
};

// Parses and validates the header of a file of `file_size` bytes whose first
// bytes are `bytes` (all of the file, or at least all of its header). Throws
// BadInput "<file_label>: ..." naming the key or tensor involved on any
// malformation: bad magic or version, counts or lengths past the end,
// duplicate keys or tensor names, an unknown value or tensor type, a
// general.alignment that is not a uint32 power of two, an offset that is not
// aligned, data past the end of the file or overlapping another tensor's.
GgufHeader parse_gguf_header(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& file_label);

// A GGUF file opened read-only and mapped whole; the pages read are dropped
// again by release(), as for safetensors, so streaming keeps memory flat.
class GgufFile {
 public:
  // Throws BadInput naming `path` if it cannot be opened or is malformed.
  explicit GgufFile(const std::filesystem::path& path);
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  uint64_t size() const { return file_.size(); }
  uint32_t version() const { return header_.version; }
  const nlohmann::ordered_json& metadata() const { return header_.metadata; }
  // "uint32", "string", "array of float32", ... for `key`; empty when absent.
  std::string metadata_type(std::string_view key) const;
  const std::vector<GgufTensorInfo>& tensors() const { return header_.tensors; }
  // nullptr when the file has no tensor of that name.
  const GgufTensorInfo* find(std::string_view name) const;

  // The bytes of a tensor (pages stay mapped until release()).
  std::span<const uint8_t> raw(const GgufTensorInfo& t) const;
  // Drops the mapped pages lying wholly inside [begin, end) of the file.
  void release(uint64_t begin, uint64_t end) const;

 private:
  std::filesystem::path path_;
  MappedFile file_;
  GgufHeader header_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace llm2hef::core
