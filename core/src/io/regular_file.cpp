#include "llm2hef/core/io/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm2hef/core/io/near_miss.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

bool is_present_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec);
}

RegularFile::RegularFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0 && errno == ENOENT) throw BadInput(path.string() + ": no such file" + did_you_mean_suffix(path));
  if (fd_ < 0) throw BadInput(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw BadInput(path.string() + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw BadInput(path.string() + ": is " + kind_of(st.st_mode) + "; a regular file is expected");
  }
  // Back to blocking reads for the regular file.
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(st.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RegularFile::read_all(uint64_t max_bytes) const {
  if (size_ > max_bytes)
    throw BadInput(path_.string() + ": " + std::to_string(size_) + " bytes exceed the limit of " +
                   std::to_string(max_bytes) + " bytes for this kind of file");
  std::string out(static_cast<size_t>(size_), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw BadInput(path_.string() + ": read failed: " + std::strerror(errno));
    if (n == 0) throw BadInput(path_.string() + ": shrank while being read");
    done += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace llm2hef::core
