#include "llm2hef/registry/temp_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

InterruptCleanup& interrupt_cleanup() {
  static InterruptCleanup cleanup;
  return cleanup;
}

}  // namespace

void set_interrupt_cleanup(InterruptCleanup cleanup) { interrupt_cleanup() = std::move(cleanup); }

std::vector<fs::path> create_folders(const fs::path& dir, const std::string& what) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path d = dir; !d.empty() && !fs::exists(fs::symlink_status(d, ec)); d = d.parent_path()) {
    missing.insert(missing.begin(), d);
    if (d == d.parent_path()) break;
  }
  std::vector<fs::path> created;
  for (const fs::path& d : missing) {
    if (!fs::create_directory(d, ec) && ec) {
      remove_created_folders(created);
      throw BadInput(d.string() + ": cannot create " + what + ": " + ec.message());
    }
    created.push_back(d);
    if (interrupt_cleanup().note_folders) interrupt_cleanup().note_folders({d});
  }
  if (!fs::is_directory(dir, ec)) {
    remove_created_folders(created);
    throw BadInput(dir.string() + ": " + what + " is not a folder" +
                   (fs::exists(fs::symlink_status(dir, ec)) ? " (a file of that name is in the way)" : ""));
  }
  return created;
}

void remove_created_folders(const std::vector<fs::path>& folders) {
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) ::rmdir(it->c_str());
  forget_created_folders(folders);
}

void forget_created_folders(const std::vector<fs::path>& folders) {
  if (interrupt_cleanup().forget_folders && !folders.empty()) interrupt_cleanup().forget_folders(folders);
}

CreatedFolders::~CreatedFolders() {
  if (!kept_) remove_created_folders(folders_);
}

void CreatedFolders::keep() {
  kept_ = true;
  forget_created_folders(folders_);
}

TempFile::TempFile(const fs::path& dir, const std::string& stem, unsigned mode) {
  auto create = [&] {
    std::string pattern = (dir / (kTempFilePrefix + stem + "-XXXXXX")).string();
    fd_ = ::mkostemp(pattern.data(), O_CLOEXEC);
    if (fd_ < 0) throw BadInput(dir.string() + ": cannot create a file: " + std::strerror(errno));
    return fs::path(pattern);
  };
  path_ = interrupt_cleanup().create_temp ? interrupt_cleanup().create_temp(create) : create();
  // Held while the file is ours, also after sync_and_close(): a later run
  // removes only files nobody holds. A descriptor of its own, so closing the
  // written one does not release it.
  lock_fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (lock_fd_ >= 0) ::flock(lock_fd_, LOCK_EX | LOCK_NB);
  if (::fchmod(fd_, static_cast<mode_t>(mode)) != 0)
    throw BadInput(path_.string() + ": cannot set its permissions: " + std::strerror(errno));
}

TempFile::~TempFile() {
  if (fd_ >= 0) ::close(fd_);
  std::error_code ec;
  fs::remove(path_, ec);
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (interrupt_cleanup().forget_temp) interrupt_cleanup().forget_temp(path_);
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
