#include "llm2hef/core/io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

const uint64_t kPage = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));

}  // namespace

MappedFile::MappedFile(const std::filesystem::path& path) {
  const std::string label = path.string();
  Fd fd(::open(label.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));  // a FIFO must not block the open
  if (fd.get() < 0) throw BadInput(label + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw BadInput(label + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw BadInput(label + ": not a regular file");
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ == 0) return;  // mmap refuses a zero length
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (m == MAP_FAILED) throw BadInput(label + ": cannot map into memory: " + std::strerror(errno));
  map_ = static_cast<const uint8_t*>(m);
}

uint64_t MappedFile::page_size() { return kPage; }

MappedFile::~MappedFile() {
  if (map_) ::munmap(const_cast<uint8_t*>(map_), size_);
}

void MappedFile::release(uint64_t begin, uint64_t end) const {
  const uint64_t lo = (begin + kPage - 1) / kPage * kPage;
  const uint64_t hi = std::min(end, size_) / kPage * kPage;
  if (map_ && lo < hi) ::madvise(const_cast<uint8_t*>(map_) + lo, hi - lo, MADV_DONTNEED);
}

void MappedFile::release_covering(uint64_t begin, uint64_t end) const {
  const uint64_t lo = begin / kPage * kPage;
  const uint64_t hi = std::min((std::min(end, size_) + kPage - 1) / kPage * kPage, (size_ + kPage - 1) / kPage * kPage);
  if (map_ && lo < hi) ::madvise(const_cast<uint8_t*>(map_) + lo, hi - lo, MADV_DONTNEED);
}

}  // namespace llm2hef::core
