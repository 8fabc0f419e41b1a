#include "store_writer.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <vector>

#include <spdlog/spdlog.h>

#include "llm2hef/core/io/progress.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::package {

namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 4u << 20;
constexpr uint64_t kShowProgressFrom = 64ull << 20;

std::string errno_text() { return std::strerror(errno); }

// A descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads `file` in blocks, feeding each to `sink`; returns the bytes read.
template <class Sink>
uint64_t stream_file(const fs::path& file, const std::string& label, bool progress, Sink&& sink) {
  const RegularFile in(file);  // a FIFO or device is refused, not read
  const uint64_t total = in.size();
  Progress bar(label, total, progress && total >= kShowProgressFrom);
  std::vector<char> buf(kBlock);
  uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(in.fd(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw BadInput(file.string() + ": read failed: " + errno_text());
    if (n == 0) break;
    sink(buf.data(), static_cast<size_t>(n));
    done += static_cast<uint64_t>(n);
    bar.update(done);
  }
  bar.finish();
  return done;
}

void write_all(int fd, const char* p, size_t n, const fs::path& what) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw BadInput(what.string() + ": write failed: " + errno_text());
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// A hidden temporary file in `folder`, `.<stem>.llm2hef-XXXXXX`: locked
// while it lives, removed on scope exit and by the signal watcher on Ctrl-C or
// SIGTERM (core/io/staging.hpp); one a killed run left is swept by the next
// (sweep_leftovers).
std::string temp_prefix(const std::string& stem) { return "." + stem + ".llm2hef-"; }

struct TempFile {
  std::optional<ScratchFile> scratch;
  fs::path path;  // empty once moved into place
  Fd fd;
  TempFile(const fs::path& folder, const std::string& stem) {
    try {
      scratch.emplace(folder, temp_prefix(stem));
    } catch (const std::system_error& e) {
      throw BadInput(folder.string() + ": cannot create a temporary file: " + e.code().message());
    }
    path = scratch->path();
    fd.fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd.fd < 0) throw BadInput(path.string() + ": cannot open the temporary file: " + errno_text());
  }
  // Flushed to disk and world-readable (the server may run as another user).
  void finish(const fs::path& target) {
    if (::fsync(fd.fd) != 0) throw BadInput(target.string() + ": fsync failed: " + errno_text());
    ::fchmod(fd.fd, 0644);
  }
  // Moves the file to `target` without ever replacing an existing file.
  // Returns false (and keeps the temporary) when `target` exists.
  bool link_to(const fs::path& target) {
    if (::link(path.c_str(), target.c_str()) != 0) {
      if (errno == EEXIST) return false;
      throw BadInput(target.string() + ": cannot move the new file into place: " + errno_text());
    }
    std::error_code ec;
    fs::remove(path, ec);
    path.clear();
    return true;
  }
  void rename_to(const fs::path& target) {
    std::error_code ec;
    fs::rename(path, target, ec);
    if (ec) throw BadInput(target.string() + ": cannot move the new file into place: " + ec.message());
    path.clear();
  }
};

}  // namespace

std::string sha256_of_file(const fs::path& file, bool progress) {
  registry::Sha256 h;
  stream_file(file, "hashing " + file.filename().string(), progress, [&](const char* p, size_t n) { h.update(p, n); });
  return h.finish_hex();
}

StoreWriter::StoreWriter(fs::path store) : store_(std::move(store)) {
  if (store_.filename().empty()) store_ = store_.parent_path();
  std::error_code ec;
  if (fs::exists(store_, ec) && !fs::is_directory(store_, ec))
    throw BadInput(store_.string() + ": the store exists but is not a folder");
  const fs::path parent = store_.parent_path().empty() ? fs::path(".") : store_.parent_path();
  if (!fs::is_directory(parent, ec))
    throw UsageError(store_.string() + ": parent folder " + parent.string() + " does not exist");
}

StoreWriter::~StoreWriter() {
  if (!committed_) {
    std::error_code ec;
    for (auto it = created_files_.rbegin(); it != created_files_.rend(); ++it) {
      fs::remove(*it, ec);
      unregister_staging(*it);
    }
    // Innermost first, only when empty.
    remove_created_folders(created_dirs_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);  // after the removals: they are part of the run
}

void StoreWriter::lock_store() {
  if (lock_fd_ >= 0) return;
  for (;;) {
    make_dirs(store_);
    const int fd = ::open(store_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) throw BadInput(store_.string() + ": cannot open the store: " + errno_text());
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      spdlog::warn("{}: another llm2hef is changing this store; waiting for it", store_.string());
      while (::flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
          const int err = errno;
          ::close(fd);
          throw BadInput(store_.string() + ": cannot lock the store: " + std::strerror(err));
        }
      }
    }
    // The run we waited for may have removed the store it created (empty, on
    // failure): a lock on a folder no longer at that path protects nothing.
    struct stat held {
    }, now{};
    if (::fstat(fd, &held) == 0 && ::stat(store_.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino) {
      lock_fd_ = fd;
      return;
    }
    ::close(fd);
  }
}

void StoreWriter::commit() {
  committed_ = true;
  for (const fs::path& f : created_files_) unregister_staging(f);
  forget_created_folders(created_dirs_);
}

// A file this run put in the store is the run's until commit(): registered
// with the signal watcher, so that an interrupt removes it (a blob with no
// manifest was left behind otherwise).
void StoreWriter::note_created_file(const fs::path& file) {
  created_files_.push_back(file);
  create_staging([&] { return file; });
}

fs::path StoreWriter::blob_path(const std::string& sha256) const { return store_ / "blob" / ("sha256_" + sha256); }

fs::path StoreWriter::manifest_path(const ModelRef& model) const {
  return store_ / "manifests" / model.name / model.tag / "manifest.json";
}

void StoreWriter::make_dirs(const fs::path& dir) {
  std::vector<fs::path> missing;
  for (fs::path d = dir; !d.empty() && !fs::exists(d); d = d.parent_path()) missing.push_back(d);
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    std::error_code ec;
    bool made = false;
    // Made and noted in one step: a signal between the two left an empty
    // store folder behind (1 of 8 interrupted runs). The watcher removes it
    // too, when still empty.
    without_interruption([&] {
      made = fs::create_directory(*it, ec);
      if (made) note_created_folders({*it});
    });
    if (!made && ec) throw BadInput(it->string() + ": cannot create the folder: " + ec.message());
    if (made) created_dirs_.push_back(*it);
  }
  if (!fs::is_directory(dir)) throw BadInput(dir.string() + ": exists but is not a folder");
}

bool StoreWriter::put_blob(const fs::path& hef, const std::string& sha256, bool progress) {
  lock_store();
  const fs::path target = blob_path(sha256);
  make_dirs(target.parent_path());
  std::error_code ec;
  if (fs::exists(target, ec)) {
    // Same name, so it must be the same bytes: check rather than trust it.
    if (!fs::is_regular_file(target, ec))
      throw BadInput(target.string() + ": exists but is not a regular file; not replaced");
    const std::string have = sha256_of_file(target, progress);
    if (have != sha256)
      throw BadInput(target.string() + ": already exists with different content (its SHA-256 is " + have +
                     "); the store is damaged; nothing was replaced. Remove that file if no manifest needs it.");
    return true;
  }
  sweep_stale_scratch(target.parent_path(), ".sha256_");  // copies a killed run left
  TempFile tmp(target.parent_path(), target.filename().string());
  registry::Sha256 h;
  stream_file(hef, "copying " + hef.filename().string(), progress, [&](const char* p, size_t n) {
    h.update(p, n);
    write_all(tmp.fd.fd, p, n, target);
  });
  // The HEF was hashed once before; a file changed in between is not packaged.
  if (h.finish_hex() != sha256)
    throw BadInput(hef.string() + ": changed while it was being copied into the store; not packaged");
  tmp.finish(target);
  if (!tmp.link_to(target)) {
    // Another run packaging the same HEF (under another name) got there
    // first: the name is the content's hash, so a blob that hashes right is
    // the same bytes, reused as one found before copying would be.
    if (fs::is_regular_file(fs::symlink_status(target, ec)) && sha256_of_file(target, false) == sha256) return true;
    throw BadInput(target.string() + ": appeared while copying with other content; not replaced");
  }
  note_created_file(target);
  return false;
}

void StoreWriter::put_manifest(const ModelRef& model, const std::string& text, bool replace) {
  lock_store();
  const fs::path target = manifest_path(model);
  sweep_stale_scratch(store_, temp_prefix("manifest.json"));
  TempFile tmp(store_, "manifest.json");
  write_all(tmp.fd.fd, text.data(), text.size(), target);
  tmp.finish(target);
  make_dirs(target.parent_path());
  std::error_code ec;
  const bool existed = fs::exists(target, ec);
  if (existed && !replace)
    throw UsageError(model.key() + " already exists in " + store_.string() + " (" + target.string() +
                     "); pass --force to replace it");
  if (existed) {
    tmp.rename_to(target);  // atomic replacement: old or new, never half
  } else {
    if (!tmp.link_to(target))
      throw UsageError(target.string() + ": appeared while packaging; not replaced (pass --force to replace it)");
    note_created_file(target);
  }
}

}  // namespace llm2hef::core::package
