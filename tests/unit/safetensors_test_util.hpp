// Helpers shared by the checkpoint-reader tests: write small safetensors
// files (well-formed or deliberately broken) into a per-test temporary folder
// (TempDir, from temp_dir.hpp).
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"

namespace llm2hef::testing {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

inline void write_file(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

inline void write_text(const fs::path& p, const std::string& s) { write_file(p, Bytes(s.begin(), s.end())); }

template <typename T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

struct TestTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  Bytes data;
};

// The header length as 8 little-endian bytes, then the header, then the data.
inline Bytes raw_safetensors(const std::string& header, const Bytes& data = {}) {
  Bytes out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// The header a writer would produce for tensors laid out back to back.
inline nlohmann::json header_for(const std::vector<TestTensor>& tensors) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  return h;
}

inline Bytes concat_data(const std::vector<TestTensor>& tensors) {
  Bytes d;
  for (const auto& t : tensors) d.insert(d.end(), t.data.begin(), t.data.end());
  return d;
}

// A well-formed file. `pad_to` rounds the header up with spaces as the
// reference writer does (8); 1 leaves the data section unaligned.
inline Bytes make_safetensors(const std::vector<TestTensor>& tensors, size_t pad_to = 8) {
  std::string header = header_for(tensors).dump();
  while (header.size() % pad_to) header += ' ';
  return raw_safetensors(header, concat_data(tensors));
}

inline TestTensor f32_tensor(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
  return {name, "F32", std::move(shape), to_bytes(v)};
}

}  // namespace llm2hef::testing
