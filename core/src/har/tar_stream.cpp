#include "llm2hef/core/har/tar_stream.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

#include <algorithm>
#include <vector>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

namespace {

constexpr size_t kBlock = 1 << 20;  // streaming block; peak memory does not grow with the HAR

// "./a//b/" and "a/b" are one member for duplicate detection.
std::string normalized(const std::string& name) {
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string::npos) j = name.size();
    std::string part = name.substr(i, j - i);
    if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + part;
    i = j + 1;
  }
  return out;
}

}  // namespace

void validate_member_name(const std::string& label, const std::string& name) {
  if (name.empty()) throw BadInput(label + ": a tar member has an empty name");
  if (name.find('\0') != std::string::npos) throw BadInput(label + ": a tar member name contains a NUL byte");
  if (name[0] == '/') throw BadInput(label + ": member '" + name + "' has an absolute path; refused");
  size_t i = 0;
  while (i <= name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string::npos) j = name.size();
    if (name.compare(i, j - i, "..") == 0 && j - i == 2)
      throw BadInput(label + ": member '" + name + "' contains a '..' component; refused");
    i = j + 1;
  }
  if (normalized(name).empty()) throw BadInput(label + ": member '" + name + "' names no file");
}

TarReader::TarReader(std::string label) : a_(archive_read_new()), label_(std::move(label)) {
  if (!a_) throw InternalError("libarchive: out of memory");
  // Plain tar only: a HAR is an uncompressed tar, and decompression filters
  // may run external programs.
  archive_read_support_format_tar(a_);
}

TarReader::~TarReader() {
  if (a_) archive_read_free(a_);
}

void TarReader::fail(const std::string& what) const {
  const char* msg = archive_error_string(a_);
  throw BadInput(label_ + ": " + what + (msg ? std::string(": ") + msg : std::string()) +
                 (current_.empty() ? "" : " (member '" + current_ + "')"));
}

std::unique_ptr<TarReader> TarReader::open_file(const std::filesystem::path& path) {
  std::unique_ptr<TarReader> r(new TarReader(path.string()));
  // Checked on the opened descriptor: a FIFO or a device never reaches libarchive.
  r->file_ = std::make_unique<RegularFile>(path);
  if (archive_read_open_fd(r->a_, r->file_->fd(), kBlock) != ARCHIVE_OK) r->fail("cannot open as a tar archive");
  return r;
}

std::unique_ptr<TarReader> TarReader::open_memory(const void* data, size_t size, std::string label) {
  std::unique_ptr<TarReader> r(new TarReader(std::move(label)));
  if (archive_read_open_memory(r->a_, data, size) != ARCHIVE_OK) r->fail("cannot open as a tar archive");
  return r;
}

std::optional<TarMember> TarReader::next() {
  archive_entry* e = nullptr;
  current_.clear();
  const int rc = archive_read_next_header(a_, &e);
  if (rc == ARCHIVE_EOF) return std::nullopt;
  if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) fail("not a readable tar archive (a HAR is an uncompressed tar)");
  const char* path = archive_entry_pathname(e);
  TarMember m;
  m.name = path ? path : "";
  validate_member_name(label_, m.name);
  current_ = m.name;
  if (archive_entry_hardlink(e) || archive_entry_symlink(e))
    throw BadInput(label_ + ": member '" + m.name + "' is a link; refused");
  const mode_t type = archive_entry_filetype(e);
  if (type == AE_IFDIR) {
    m.is_dir = true;
  } else if (type != AE_IFREG) {
    throw BadInput(label_ + ": member '" + m.name + "' is not a regular file (device, FIFO or socket); refused");
  }
  if (!seen_.insert(normalized(m.name)).second)
    throw BadInput(label_ + ": member '" + m.name + "' appears twice; refused (which copy is meant is ambiguous)");
  const la_int64_t size = archive_entry_size(e);
  if (size < 0) throw BadInput(label_ + ": member '" + m.name + "' has a negative size");
  m.size = m.is_dir ? 0 : static_cast<uint64_t>(size);
  m.mode = archive_entry_perm(e);
  m.mtime = archive_entry_mtime(e);
  return m;
}

size_t TarReader::read(void* buf, size_t n) {
  const la_ssize_t got = archive_read_data(a_, buf, n);
  if (got < 0) fail("read failed (truncated or corrupt archive?)");
  return static_cast<size_t>(got);
}

std::string TarReader::read_all(uint64_t limit, uint64_t expected_size) {
  std::string out;
  out.reserve(static_cast<size_t>(std::min(limit, expected_size)));
  std::vector<char> buf(64 * 1024);
  for (;;) {
    const size_t got = read(buf.data(), buf.size());
    if (got == 0) break;
    if (out.size() + got > limit)
      throw BadInput(label_ + ": member '" + current_ + "' is larger than " + std::to_string(limit) +
                     " bytes, more than such a member can plausibly be");
    out.append(buf.data(), got);
  }
  return out;
}

}  // namespace llm2hef::core::har
