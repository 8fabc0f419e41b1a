// A regular file mapped read-only and whole, for the readers that stream
// tensors out of multi-GB checkpoint files (safetensors, GGUF): what was read
// is given back with release(), so the resident set stays near one block.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

namespace llm2hef::core {

class MappedFile {
 public:
  // Throws BadInput naming `path` when it cannot be opened or mapped, or is
  // not a regular file (a FIFO or a device is refused without blocking). An
  // empty file is not mapped: bytes() is then empty.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  static uint64_t page_size();
  uint64_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {map_, static_cast<size_t>(size_)}; }
  const uint8_t* data() const { return map_; }
  // Drops the mapped pages lying wholly inside [begin, end) of the file: the
  // neighbours' bytes on a shared edge page are likely read next, and
  // dropping them would only cost a re-read. Advisory; failure is harmless.
  void release(uint64_t begin, uint64_t end) const;
  // Drops every mapped page that holds a byte of [begin, end), edge pages
  // included: for a read split among threads, where each slice's edge page
  // is shared with a slice read by another thread and was otherwise never
  // dropped (a page per slice: 100 MB of resident set on GPT-2 XL at 16
  // threads). A neighbour still reading it reads it again from the page
  // cache (the mapping is never written, so nothing is lost).
  void release_covering(uint64_t begin, uint64_t end) const;

 private:
  uint64_t size_ = 0;
  const uint8_t* map_ = nullptr;
};

}  // namespace llm2hef::core
