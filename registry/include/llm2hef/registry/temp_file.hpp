// A new file that appears whole under its final name or not at all, and
// never replaces an existing one: written to a hidden temporary file in the
// target's folder, flushed, then hard-linked to the final name (link() fails
// when the name exists) and the temporary name removed. Used for installed
// adapters, their manifests and trusted keys. (core's AtomicFile replaces by
// rename; the registry library sits below core and needs no-replace anyway.)
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace llm2hef::registry {

// How temporary files and new folders are removed when the process is
// interrupted (SIGINT, SIGTERM, SIGHUP). The watcher lives in core
// (core/io/staging.hpp), above this library, so the CLI plugs it in at
// start-up; without it (unit tests, fuzzers) only scope exit cleans up.
struct InterruptCleanup {
  // Runs the creating function and registers the path it returns, atomically
  // with respect to a signal.
  std::function<std::filesystem::path(const std::function<std::filesystem::path()>&)> create_temp;
  std::function<void(const std::filesystem::path&)> forget_temp;
  // Folders made by this run (outermost first), removed when empty.
  std::function<void(const std::vector<std::filesystem::path>&)> note_folders, forget_folders;
};
void set_interrupt_cleanup(InterruptCleanup cleanup);

// The prefix of every TempFile name: what a later run sweeps when the
// process that made it is gone (its flock is released with it).
inline constexpr const char* kTempFilePrefix = ".llm2hef-install-";

// Creates `dir` and its missing parents. Returns those it created, outermost
// first, each registered for removal on a signal: pass them to
// remove_created_folders() when the run fails, forget_created_folders() when
// it succeeds. BadInput naming the folder when one cannot be made.
std::vector<std::filesystem::path> create_folders(const std::filesystem::path& dir, const std::string& what);
void remove_created_folders(const std::vector<std::filesystem::path>& folders);
void forget_created_folders(const std::vector<std::filesystem::path>& folders);

// Removes every folder in `folders` (innermost first, only when empty) on
// scope exit unless keep() was called.
class CreatedFolders {
 public:
  explicit CreatedFolders(std::vector<std::filesystem::path> folders) : folders_(std::move(folders)) {}
  ~CreatedFolders();
  CreatedFolders(const CreatedFolders&) = delete;
  CreatedFolders& operator=(const CreatedFolders&) = delete;
  void keep();

 private:
  std::vector<std::filesystem::path> folders_;
  bool kept_ = false;
};

class TempFile {
 public:
  // A hidden ".llm2hef-install-<stem>-XXXXXX" in `dir`, with `mode`
  // (0644: what the host expects of a library, not writable by others),
  // flock()ed while open and registered with the interrupt cleanup.
  TempFile(const std::filesystem::path& dir, const std::string& stem, unsigned mode = 0644);
  ~TempFile();  // removes the temporary name
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::filesystem::path& path() const { return path_; }
  void write_all(const std::string& text);
  void sync_and_close();
  // UsageError when `target` exists; BadInput on other failures.
  void link_to(const std::filesystem::path& target) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  int lock_fd_ = -1;  // flock()ed until the destructor
};

// fsync of a folder, so that new names in it survive a power cut.
void sync_folder(const std::filesystem::path& dir);

// TempFile + write + link_to + sync_folder. A secret key passes 0600: the
// file never has wider permissions, not even for a moment.
void write_new_file(const std::filesystem::path& target, const std::string& contents, unsigned mode = 0644);

}  // namespace llm2hef::registry
