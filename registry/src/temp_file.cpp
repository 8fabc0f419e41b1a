#include "llm2hef/registry/temp_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

TempFile::TempFile(const fs::path& dir, const std::string& stem, unsigned mode) {
  std::string pattern = (dir / (".llm2hef-install-" + stem + "-XXXXXX")).string();
  fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
  if (fd_ < 0) throw BadInput(dir.string() + ": cannot create a file: " + std::strerror(errno));
  path_ = pattern;
  if (::fchmod(fd_, static_cast<mode_t>(mode)) != 0)
    throw BadInput(path_.string() + ": cannot set its permissions: " + std::strerror(errno));
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  fs::remove(path_, ec);
}

void TempFile::write_all(const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd_, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw BadInput(path_.string() + ": cannot write: " + std::strerror(errno));
    done += static_cast<std::size_t>(w);
  }
}

void TempFile::sync_and_close() {
  const bool ok = ::fsync(fd_) == 0;
  const int err = errno;
  const bool closed = ::close(fd_) == 0;
  fd_ = -1;
  if (!ok || !closed) throw BadInput(path_.string() + ": cannot flush to the disk: " + std::strerror(ok ? errno : err));
}

void TempFile::link_to(const fs::path& target) const {
  if (::link(path_.c_str(), target.c_str()) != 0) {
    if (errno == EEXIST) throw UsageError(target.string() + " already exists; not replaced");
    throw BadInput(target.string() + ": cannot create: " + std::strerror(errno));
  }
}

void sync_folder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_new_file(const fs::path& target, const std::string& contents, unsigned mode) {
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  TempFile file(dir, target.filename().string(), mode);
  file.write_all(contents);
  file.sync_and_close();
  file.link_to(target);
  sync_folder(dir);
}

}  // namespace llm2hef::registry
