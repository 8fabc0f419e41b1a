// Tar archives read as streams (libarchive), for HARs that can be tens of
// GB: members are visited in order, their data read in blocks, and nothing
// is ever extracted to disk by name. tar_writer.hpp writes them.
//
// Every member name is validated before the caller sees it: absolute paths,
// `..` components, links, devices, FIFOs and duplicate names are refused with
// BadInput naming the archive and the member (a HAR never needs them, and a
// tool that later extracts our output must not be led outside its folder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>

struct archive;

#include "llm2hef/core/io/regular_file.hpp"

namespace llm2hef::core::har {

struct TarMember {
  std::string name;   // as stored, validated
  uint64_t size = 0;  // data bytes (0 for folders)
  bool is_dir = false;
  uint32_t mode = 0644;  // permission bits
  int64_t mtime = 0;
};

// Throws BadInput when `name` may not appear in a HAR (see above).
void validate_member_name(const std::string& archive_label, const std::string& name);

class TarReader {
 public:
  // An uncompressed tar file; seeks over members that are skipped.
  static std::unique_ptr<TarReader> open_file(const std::filesystem::path& path);
  // Tar bytes in memory (tests, fuzzing). `label` names it in errors.
  static std::unique_ptr<TarReader> open_memory(const void* data, size_t size, std::string label);
  ~TarReader();
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  // The next member, validated; nullopt at the end of the archive.
  std::optional<TarMember> next();
  // Up to `n` bytes of the current member's data; 0 at its end.
  size_t read(void* buf, size_t n);
  // The whole current member, refused when larger than `limit` bytes.
  // expected_size: the member's declared size, reserved up front (appending
  // alone can leave twice the text allocated).
  std::string read_all(uint64_t limit, uint64_t expected_size = 0);
  const std::string& label() const { return label_; }

 private:
  explicit TarReader(std::string label);
  [[noreturn]] void fail(const std::string& what) const;
  archive* a_ = nullptr;
  std::unique_ptr<RegularFile> file_;  // open_file's descriptor, checked to be a regular file
  std::string label_;
  std::string current_;  // name of the member being read
  std::set<std::string> seen_;
};

}  // namespace llm2hef::core::har
