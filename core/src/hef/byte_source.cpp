// File and memory ByteSources for the HEF reader.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace {

std::string range_text(uint64_t offset, size_t n) {
  return "bytes " + std::to_string(offset) + ".." + std::to_string(offset + n);
}

class FileSource final : public ByteSource {
 public:
  explicit FileSource(std::string path) : path_(std::move(path)) {
    // O_NONBLOCK: a FIFO would block the open forever; fstat below refuses it.
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw BadInput(path_ + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw BadInput(path_ + ": not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  void read(uint64_t offset, void* out, size_t n) const override {
    if (offset > size_ || n > size_ - offset)
      throw BadInput(path_ + ": " + range_text(offset, n) + " lie past the end of the file (" + std::to_string(size_) +
                     " bytes)");
    auto* dst = static_cast<char*>(out);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        throw BadInput(path_ + ": read failed at byte " + std::to_string(offset) +
                       (got < 0 ? std::string(": ") + std::strerror(errno) : ": file shrank"));
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  void read(uint64_t offset, void* out, size_t n) const override {
    if (offset > bytes_.size() || n > bytes_.size() - offset)
      throw BadInput(name_ + ": " + range_text(offset, n) + " lie past the end of the file (" +
                     std::to_string(bytes_.size()) + " bytes)");
    if (n > 0) std::memcpy(out, bytes_.data() + offset, n);
  }

 private:
  std::string bytes_, name_;
};

}  // namespace

std::unique_ptr<ByteSource> open_file_source(const std::string& path) { return std::make_unique<FileSource>(path); }

std::unique_ptr<ByteSource> memory_source(std::string bytes, std::string name) {
  return std::make_unique<MemorySource>(std::move(bytes), std::move(name));
}

}  // namespace llm2hef::core::hef
