// Outputs that appear whole or not at all.
//
// Everything is written into a hidden sibling folder (same filesystem, so the
// final rename is atomic); on success it is renamed to the target, on any
// failure the destructor removes it, and the target's missing parent folders,
// created for it, with it (when still empty). Before the rename every file and folder
// of the output is flushed to the disk (fsync), and the parent folder after
// it, so that a power cut leaves the old output or the whole new one, never a
// complete-looking folder of truncated files. Single files use the same idea. A
// signal, or a killed process, leaves nothing behind either (staging.hpp):
// staging paths are locked while alive, removed on SIGINT/SIGTERM/SIGHUP,
// and swept by the next run that writes the same target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace llm2hef::core {

class AtomicDir {
 public:
  // Fails with UsageError when `target` exists and `replace` is false.
  // durable = false skips the flushes (still atomic for a crash of this
  // process, not for a power cut).
  AtomicDir(std::filesystem::path target, bool replace, bool durable = true);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }
  void commit();

 private:
  void replace_previous();
  std::filesystem::path target_, staging_;
  std::vector<std::filesystem::path> created_parents_;  // made for target_, removed again unless committed
  int lock_fd_ = -1;                                    // flock()ed while the staging folder is ours
  bool replace_, durable_, committed_ = false;
};

// fsync of every regular file and folder under `dir`, then `dir` itself.
// BadInput naming the path when one fails.
void sync_tree(const std::filesystem::path& dir);
// fsync of a folder (to make a rename or a new name in it durable).
void sync_folder(const std::filesystem::path& dir);

// One output file, the same way: a hidden temporary file in the target's
// folder, renamed over the target by commit() (after fsync, mode 0644) and
// removed by the destructor otherwise. Write through write_at() or open
// path() yourself.
class AtomicFile {
 public:
  // UsageError when `target` exists and `replace` is false, when it exists
  // and is not a regular file (check_file_output), or when its folder does
  // not exist.
  AtomicFile(std::filesystem::path target, bool replace);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }
  // The target's folder, for scratch files on the same filesystem.
  std::filesystem::path folder() const { return staging_.parent_path(); }
  void write_at(uint64_t offset, const void* data, size_t size);
  void commit();

 private:
  std::filesystem::path target_, staging_;
  std::vector<std::filesystem::path> created_parents_;  // made for target_, removed again unless committed
  int fd_ = -1;
  bool committed_ = false;
};

// Writes `contents` to `path` through an AtomicFile; an existing regular
// file is replaced only when `replace` is true.
void write_file_atomic(const std::filesystem::path& path, const std::string& contents, bool replace);

}  // namespace llm2hef::core
