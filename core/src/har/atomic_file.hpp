// A single output file that appears whole or not at all: written under a
// hidden temporary name in the target's folder, renamed on commit, removed
// otherwise (private to core/src/har).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <vector>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

class AtomicFile {
 public:
  AtomicFile(std::filesystem::path target, bool replace) : target_(std::move(target)) {
    namespace fs = std::filesystem;
    if (fs::exists(target_) && !replace)
      throw UsageError(target_.string() + ": already exists (pass --force to replace it)");
    const fs::path parent = target_.parent_path().empty() ? fs::path(".") : target_.parent_path();
    if (!fs::is_directory(parent))
      throw UsageError(target_.string() + ": folder " + parent.string() + " does not exist");
    std::string t = (parent / ("." + target_.filename().string() + ".tmp-XXXXXX")).string();
    std::vector<char> b(t.begin(), t.end());
    b.push_back('\0');
    const int fd = ::mkstemp(b.data());
    if (fd < 0) throw BadInput(parent.string() + ": cannot create a temporary file");
    ::close(fd);
    tmp_ = b.data();
  }
  ~AtomicFile() {
    if (committed_) return;
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::filesystem::path& path() const { return tmp_; }
  std::filesystem::path folder() const { return tmp_.parent_path(); }
  void commit() {
    std::error_code ec;
    std::filesystem::permissions(tmp_, std::filesystem::perms(0644), ec);
    std::filesystem::rename(tmp_, target_, ec);
    if (ec) throw BadInput(target_.string() + ": cannot rename into place: " + ec.message());
    committed_ = true;
  }

 private:
  std::filesystem::path target_, tmp_;
  bool committed_ = false;
};

}  // namespace llm2hef::core::har
