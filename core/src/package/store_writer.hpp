// Changes to a hailo-ollama model store that happen all together or not at
// all: folders and files this run creates are removed again unless commit()
// is reached. Blobs are content-addressed and never overwritten. One run at a
// time changes a store: the store folder is locked (flock) from the first
// change to the end, so a failing run never removes a blob that a concurrent
// run found in place and wrote a manifest for (issue 41, item 5).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "llm2hef/core/package/package.hpp"

namespace llm2hef::core::package {

// SHA-256 of a file as 64 lowercase hex digits (how the server names and
// verifies blobs, utils/sha256.cpp), streamed; BadInput when unreadable.
std::string sha256_of_file(const std::filesystem::path& file, bool progress);

class StoreWriter {
 public:
  // `store` may not exist yet, but its parent folder must.
  explicit StoreWriter(std::filesystem::path store);
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  std::filesystem::path blob_path(const std::string& sha256) const;
  std::filesystem::path manifest_path(const ModelRef& model) const;

  // blob/sha256_<hex> holding `hef`. An existing blob of that name is kept
  // when its own hash matches (returns true); any other file there is a
  // BadInput, never replaced. A new blob is copied through a hidden file in
  // blob/, re-hashed as it is written, and linked into place (no replace).
  bool put_blob(const std::filesystem::path& hef, const std::string& sha256, bool progress);

  // manifests/<name>/<tag>/manifest.json. The file is written outside
  // manifests/ first (the server parses every file under manifests/ at
  // startup, so a stray partial file there would stop it), then moved in:
  // replacing an existing one only when `replace`.
  void put_manifest(const ModelRef& model, const std::string& text, bool replace);

  // Keeps what was written (and forgets the folders made, which the signal
  // watcher would otherwise remove when empty).
  void commit();

 private:
  void make_dirs(const std::filesystem::path& dir);
  void lock_store();
  void note_created_file(const std::filesystem::path& file);

  std::filesystem::path store_;
  int lock_fd_ = -1;  // the store folder, flock()ed from the first change to the end of the run
  std::vector<std::filesystem::path> created_dirs_, created_files_;
  bool committed_ = false;
};

}  // namespace llm2hef::core::package
