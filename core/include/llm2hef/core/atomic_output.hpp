// Outputs that appear whole or not at all.
//
// Everything is written into a hidden sibling folder (same filesystem, so the
// final rename is atomic); on success it is renamed to the target, on any
// failure the destructor removes it. Single files use the same idea.
#pragma once

#include <filesystem>
#include <string>

namespace llm2hef::core {

class AtomicDir {
 public:
  // Fails with UsageError when `target` exists and `replace` is false.
  AtomicDir(std::filesystem::path target, bool replace);
  ~AtomicDir();
  AtomicDir(const AtomicDir&) = delete;
  AtomicDir& operator=(const AtomicDir&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }
  void commit();

 private:
  std::filesystem::path target_, staging_;
  bool replace_, committed_ = false;
};

// Writes `contents` to `path` through a temporary file in the same folder.
void write_file_atomic(const std::filesystem::path& path, const std::string& contents);

}  // namespace llm2hef::core
