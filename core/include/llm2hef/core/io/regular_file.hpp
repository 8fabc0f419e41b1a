// Opening an input that must be a regular file. A FIFO would block the open
// (or the read) forever and /dev/zero never ends, so the file type is
// checked on the opened descriptor, which also closes the gap between a
// stat() and the open().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace llm2hef::core {

// Whether an optional input is there at all, following symlinks (the HF cache
// links snapshots to blobs): anything but a folder counts. Whether it is a
// regular file is checked on the opened descriptor by RegularFile, which
// refuses a FIFO or a device by name instead of the file being silently
// taken as absent.
bool is_present_file(const std::filesystem::path& path);

// An open descriptor of a regular file (closed by the destructor). Throws
// BadInput "<path>: ..." when it cannot be opened or is not a regular file.
class RegularFile {
 public:
  explicit RegularFile(const std::filesystem::path& path);
  ~RegularFile();
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }

  // The whole file; BadInput when it is larger than `max_bytes`.
  std::string read_all(uint64_t max_bytes) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace llm2hef::core
