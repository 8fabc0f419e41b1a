#include "llm2hef/core/io/atomic_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

#include "llm2hef/core/io/output_guard.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// The parent of an output, created when missing (as other converters do);
// UsageError when it exists as something else or cannot be made. The folders
// made here are appended to `created` (outermost first) and registered with
// the signal watcher, so that a failed or interrupted run removes them again.
fs::path ensure_parent(const fs::path& target, std::vector<fs::path>& created) {
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return parent;
  if (fs::exists(parent, ec))
    throw UsageError(target.string() + ": " + parent.string() + " exists and is not a folder");
  std::vector<fs::path> missing;  // innermost first
  for (fs::path p = parent; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  created.assign(missing.rbegin(), missing.rend());
  // Noted before they exist: a signal between the two would otherwise leave
  // them behind (an empty `out` after Ctrl-C). rmdir of one not made yet is harmless.
  without_interruption([&] {
    note_created_folders(created);
    fs::create_directories(parent, ec);
  });
  if (ec) {
    remove_created_folders(created);
    throw UsageError(target.string() + ": cannot create the folder " + parent.string() + ": " + ec.message());
  }
  return parent;
}

// The permission bits a new folder gets under the process umask (0755 under
// the usual 022); mkdtemp makes the staging folder 0700.
mode_t folder_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0777 & ~mask;
}

// A staging folder or file for `target`, locked before it bears its staging
// name: made as `.<name>.new-XXXXXX`, flock()ed, then renamed (never over
// anything) to `.<name>.tmp-XXXXXX`. A `.tmp-` path nobody holds is therefore
// always a dead run's, and the next run removes it at once, however recent
// (sweep_stale_staging). Sets `fd` to the descriptor that holds the lock.
fs::path make_locked_staging(const fs::path& target, const fs::path& parent, bool folder, int& fd) {
  const std::string name = "." + target.filename().string();
  std::string templ = (parent / (name + ".new-XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (folder) {
    if (!::mkdtemp(buf.data()))
      throw BadInput(parent.string() + ": cannot create a temporary folder: " + std::strerror(errno));
    fd = ::open(buf.data(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } else {
    fd = ::mkostemp(buf.data(), O_CLOEXEC);
  }
  const fs::path unnamed(buf.data());
  if (fd < 0) {
    const int err = errno;
    if (folder) ::rmdir(unnamed.c_str());
    throw BadInput(target.string() + ": cannot create a temporary " + (folder ? "folder" : "file") +
                   " next to it: " + std::strerror(err));
  }
  lock_staging(fd);  // fresh path: nobody else can hold it
  const std::string suffix = unnamed.filename().string().substr(name.size() + std::string(".new-").size());
  const fs::path named = parent / (name + ".tmp-" + suffix);
  if (::renameat2(AT_FDCWD, unnamed.c_str(), AT_FDCWD, named.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    ::close(fd);
    fd = -1;
    std::error_code ec;
    fs::remove(unnamed, ec);
    throw BadInput(target.string() + ": cannot name the temporary " + std::string(folder ? "folder " : "file ") +
                   named.string() + ": " + std::strerror(err));
  }
  return named;
}

}  // namespace

void sync_folder(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw BadInput(dir.string() + ": cannot open to flush: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw BadInput(dir.string() + ": fsync failed: " + std::strerror(err));
}

void sync_tree(const fs::path& dir) {
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_symlink()) continue;
    if (e.is_directory()) {
      sync_folder(e.path());
    } else if (e.is_regular_file()) {
      const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw BadInput(e.path().string() + ": cannot open to flush: " + std::strerror(errno));
      const int rc = ::fsync(fd);
      const int err = errno;
      ::close(fd);
      if (rc != 0) throw BadInput(e.path().string() + ": fsync failed: " + std::strerror(err));
    }
  }
  sync_folder(dir);
}

AtomicDir::AtomicDir(fs::path target, bool replace, bool durable)
    : target_(std::move(target)), replace_(replace), durable_(durable) {
  if (target_.filename().empty()) target_ = target_.parent_path();
  std::error_code ec;
  if (fs::exists(target_, ec) && !fs::is_directory(target_, ec))
    throw UsageError(target_.string() + ": exists and is not a folder; not replaced, even with --force");
  if (fs::exists(target_) && !replace_)
    throw UsageError(target_.string() + ": already exists (pass --force to replace it)");
  sweep_stale_staging(target_);
  // The parents first: create_staging holds the lock the folder registry takes.
  const fs::path parent = ensure_parent(target_, created_parents_);
  try {
    staging_ = create_staging([&] { return make_locked_staging(target_, parent, true, lock_fd_); });
    note_staging_target(staging_, target_);
  } catch (...) {
    remove_created_folders(created_parents_);
    throw;
  }
}

AtomicDir::~AtomicDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  unregister_staging(staging_);
  remove_created_folders(created_parents_);
}

// The previous output and the new one trade places in one step
// (renameat2 RENAME_EXCHANGE): whatever stops the process, even SIGKILL,
// either the old export is in place or the new one is, never neither (a
// Ctrl-C between "old aside" and "new in place" used to leave `out` missing
// and the old export in a staging name the next run deleted). The old one
// then sits at the staging path, still registered, and is removed.
// Filesystems without the exchange (EINVAL) take the two renames with the
// signal watcher held off, which covers every signal but SIGKILL.
void AtomicDir::replace_previous() {
  std::error_code ec;
  // Under the watcher's lock: a watcher already removing the staging folder
  // file by file would otherwise go on, after the exchange, inside the old
  // export (both lost). Holding the lock, the exchange waits for nothing but
  // the watcher, and a watcher that comes second finds the old export at
  // the staging path, which is what it may remove.
  int exchange_error = 0;
  without_interruption([&] {
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0)
      exchange_error = errno;
  });
  if (exchange_error == 0) {
    fs::remove_all(staging_, ec);
    unregister_staging(staging_);
    return;
  }
  errno = exchange_error;
  if (errno != EINVAL && errno != ENOSYS)
    throw BadInput(target_.string() +
                   ": cannot put the new output in place of the previous one: " + std::strerror(errno));
  const fs::path old = staging_.string() + ".old";
  without_interruption([&] {
    fs::rename(target_, old, ec);
    if (ec) throw BadInput(target_.string() + ": cannot move the previous output aside: " + ec.message());
    fs::rename(staging_, target_, ec);
    if (ec) {
      fs::rename(old, target_);
      throw BadInput(target_.string() + ": cannot rename the new output into place: " + ec.message());
    }
    unregister_staging(staging_);
    create_staging([&] { return old; });  // a signal from here on removes the old one, not the new
  });
  fs::remove_all(old, ec);
  unregister_staging(old);
}

void AtomicDir::commit() {
  std::error_code ec;
  if (::chmod(staging_.c_str(), folder_mode()) != 0)
    throw BadInput(staging_.string() + ": cannot set the output folder's permissions: " + std::strerror(errno));
  if (durable_) sync_tree(staging_);
  if (fs::exists(target_)) {
    if (!replace_) throw UsageError(target_.string() + ": appeared while exporting; not replaced");
    replace_previous();
  } else {
    // Renamed and unregistered in one step for the watcher: renamed while it
    // was emptying the staging folder, it left an empty `out` (3 of 60 runs).
    without_interruption([&] {
      fs::rename(staging_, target_, ec);
      if (!ec) unregister_staging(staging_);
    });
    if (ec) throw BadInput(target_.string() + ": cannot rename the new output into place: " + ec.message());
  }
  committed_ = true;
  forget_created_folders(created_parents_);
  if (durable_) sync_folder(target_.parent_path().empty() ? fs::path(".") : target_.parent_path());
}

AtomicFile::AtomicFile(fs::path target, bool replace) : target_(std::move(target)) {
  check_file_output(target_, replace);
  const fs::path parent = ensure_parent(target_, created_parents_);
  try {
    sweep_stale_staging(target_);
    staging_ = create_staging([&] { return make_locked_staging(target_, parent, false, fd_); });
    note_staging_target(staging_, target_);
  } catch (...) {
    remove_created_folders(created_parents_);
    throw;
  }
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (committed_) return;
  std::error_code ec;
  fs::remove(staging_, ec);
  unregister_staging(staging_);
  remove_created_folders(created_parents_);
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::pwrite(fd_, p, size, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw BadInput(target_.string() + ": write failed: " + std::strerror(errno));
    p += w;
    offset += static_cast<uint64_t>(w);
    size -= static_cast<size_t>(w);
  }
}

void AtomicFile::commit() {
  // Data written through path() by another descriptor is flushed by this
  // fsync too: it syncs the file, not the descriptor.
  if (::fsync(fd_) != 0) throw BadInput(target_.string() + ": fsync failed: " + std::strerror(errno));
  ::fchmod(fd_, 0644);
  // Renamed while still open, so the lock covers it until it is in place.
  std::error_code ec;
  fs::rename(staging_, target_, ec);
  if (ec) throw BadInput(target_.string() + ": cannot rename the new file into place: " + ec.message());
  unregister_staging(staging_);
  ::close(fd_);
  fd_ = -1;
  committed_ = true;
  forget_created_folders(created_parents_);
}

void write_file_atomic(const fs::path& path, const std::string& contents, bool replace) {
  AtomicFile out(path, replace);
  out.write_at(0, contents.data(), contents.size());
  out.commit();
}

}  // namespace llm2hef::core
