// A new file that appears whole under its final name or not at all, and
// never replaces an existing one: written to a hidden temporary file in the
// target's folder, flushed, then hard-linked to the final name (link() fails
// when the name exists) and the temporary name removed. Used for installed
// adapters, their manifests and trusted keys. (core's AtomicFile replaces by
// rename; the registry library sits below core and needs no-replace anyway.)
#pragma once

#include <filesystem>
#include <string>

namespace llm2hef::registry {

class TempFile {
 public:
  // A hidden ".llm2hef-install-<stem>-XXXXXX" in `dir`, with `mode`
  // (0644: what the host expects of a library, not writable by others).
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
};

// fsync of a folder, so that new names in it survive a power cut.
void sync_folder(const std::filesystem::path& dir);

// TempFile + write + link_to + sync_folder. A secret key passes 0600: the
// file never has wider permissions, not even for a moment.
void write_new_file(const std::filesystem::path& target, const std::string& contents, unsigned mode = 0644);

}  // namespace llm2hef::registry
