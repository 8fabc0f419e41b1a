#include "external_data_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

ExternalDataFile::~ExternalDataFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ExternalDataFile::open() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) throw BadInput(path_.string() + ": cannot open for writing: " + std::strerror(errno));
}

void ExternalDataFile::append(std::span<const char> bytes) { write_at(size_, bytes); }

void ExternalDataFile::write_at(uint64_t offset, std::span<const char> bytes) {
  if (fd_ < 0) open();
  const char* p = bytes.data();
  size_t left = bytes.size();
  uint64_t at = offset;
  while (left > 0) {
    const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw BadInput(path_.string() + ": write failed (disk full?): " + std::strerror(n < 0 ? errno : ENOSPC));
    p += n;
    left -= static_cast<size_t>(n);
    at += static_cast<uint64_t>(n);
  }
  size_ = std::max(size_, at);
}

void ExternalDataFile::close() {
  if (fd_ < 0) return;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw BadInput(path_.string() + ": write failed while closing: " + std::strerror(errno));
}

}  // namespace llm2hef::sdk
