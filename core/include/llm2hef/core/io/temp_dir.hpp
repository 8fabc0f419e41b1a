// The temporary folder, and private scratch folders inside it.
//
// Every use of the temporary folder in core goes through temp_root(), so that
// an unusable one ($TMPDIR missing, a file, not writable, full) is one clear
// error, BadInput (exit 3) naming TMPDIR and the path, never a raw library
// message or an internal error. $TMPDIR is read as POSIX defines it (unset
// or empty: /tmp); TMP, TEMP and TEMPDIR are not consulted, as mktemp(1)
// does not consult them either.
//
// A ScratchDir is ScratchFile's folder counterpart (staging.hpp): registered
// with the signal watcher (Ctrl-C, SIGTERM and SIGHUP remove it), locked for
// its lifetime, removed on scope exit; and the folders of the same prefix
// that a killed run left (unlocked, over a minute old) are swept when the
// next one is made.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace llm2hef::core {

// The temporary folder, absolute; BadInput when it is missing, not a folder
// or not writable.
std::filesystem::path temp_root();

class ScratchDir {
 public:
  // `<temp_root()>/<prefix>XXXXXX`, mode 0700. BadInput (naming TMPDIR) when
  // it cannot be made.
  explicit ScratchDir(const std::string& prefix);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `bytes` to path()/`name` and returns that path; BadInput naming
  // TMPDIR when the write fails (a full disk).
  std::filesystem::path write(const std::string& name, std::string_view bytes) const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;  // holds the lock that tells a live folder from a dead run's
};

}  // namespace llm2hef::core
