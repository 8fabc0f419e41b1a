// model.onnx.data as the graph builder writes it: appended in order, except
// that a transposed weight's tiles land at their place in its reserved
// region (pwrite), so each source tensor is read only once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace llm2hef::sdk {

class ExternalDataFile {
 public:
  explicit ExternalDataFile(std::filesystem::path path) : path_(std::move(path)) {}
  ~ExternalDataFile();
  ExternalDataFile(const ExternalDataFile&) = delete;
  ExternalDataFile& operator=(const ExternalDataFile&) = delete;

  // Created (truncated) on the first write.
  void append(std::span<const char> bytes);
  // `bytes` at `offset`, which may lie beyond the current end (the region
  // was reserved); the end moves to cover it.
  void write_at(uint64_t offset, std::span<const char> bytes);
  uint64_t size() const { return size_; }
  bool is_open() const { return fd_ >= 0; }
  // Closes the file; BadInput when the last writes failed.
  void close();
  const std::filesystem::path& path() const { return path_; }

 private:
  void open();
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace llm2hef::sdk
