// The tar writer (see tar_stream.hpp): POSIX ustar headers, a pax record
// for names that do not fit, headers patched in place for members whose
// size is known only at their end.
//
// Hand-written while reading stays with libarchive: libarchive writes a
// member's header, size included, before its data, so a rewritten member of
// unknown size (a multi-GB weights .npz) would have to go through a temporary
// file first. Patching the header in place lets it stream to the output.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <functional>
#include <vector>

#include "llm2hef/core/har/tar_writer.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

namespace {

constexpr size_t kRecord = 512;
constexpr size_t kCopyBlock = 1 << 20;             // member data copied in blocks of this size
constexpr uint64_t kMaxOctal11 = 077777777777ull;  // largest size an 11-digit octal field holds

using Block = std::array<char, kRecord>;

void octal(char* field, size_t width, uint64_t value) {
  // width-1 digits and a NUL, as ustar wants.
  for (size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  field[width - 1] = '\0';
}

void size_field(char* field, uint64_t size) {
  if (size <= kMaxOctal11) {
    octal(field, 12, size);
    return;
  }
  // Base-256: first byte 0x80, then the value big-endian.
  std::memset(field, 0, 12);
  field[0] = static_cast<char>(0x80);
  for (int i = 11; i >= 4; --i) {
    field[i] = static_cast<char>(size & 0xff);
    size >>= 8;
  }
}

// Splits `name` into ustar prefix/name; false when it cannot be.
bool split_name(const std::string& name, std::string& prefix, std::string& rest) {
  if (name.size() <= 100) {
    prefix.clear();
    rest = name;
    return true;
  }
  for (size_t slash = name.find('/'); slash != std::string::npos; slash = name.find('/', slash + 1)) {
    if (slash <= 155 && name.size() - slash - 1 <= 100 && name.size() - slash - 1 > 0) {
      prefix = name.substr(0, slash);
      rest = name.substr(slash + 1);
      return true;
    }
  }
  return false;
}

Block header(const std::string& name, const std::string& prefix, uint64_t size, uint32_t mode, int64_t mtime,
             char type) {
  Block b{};
  std::memcpy(b.data(), name.data(), std::min<size_t>(name.size(), 100));
  octal(b.data() + 100, 8, mode & 07777);
  octal(b.data() + 108, 8, 0);
  octal(b.data() + 116, 8, 0);
  size_field(b.data() + 124, size);
  octal(b.data() + 136, 12, mtime > 0 ? static_cast<uint64_t>(mtime) & kMaxOctal11 : 0);
  b[156] = type;
  std::memcpy(b.data() + 257, "ustar", 6);
  std::memcpy(b.data() + 263, "00", 2);
  std::memcpy(b.data() + 345, prefix.data(), std::min<size_t>(prefix.size(), 155));
  std::memset(b.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (char c : b) sum += static_cast<unsigned char>(c);
  octal(b.data() + 148, 7, sum);
  b[155] = ' ';
  return b;
}

// One pax record "<len> key=value\n", where <len> counts itself.
std::string pax_record(const std::string& key, const std::string& value) {
  const size_t body = key.size() + value.size() + 3;  // ' ', '=', '\n'
  size_t len = body + 1;
  while (std::to_string(len).size() + body != len) ++len;
  return std::to_string(len) + " " + key + "=" + value + "\n";
}

}  // namespace

TarWriter::TarWriter(const std::filesystem::path& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw BadInput(path.string() + ": cannot open for writing: " + std::strerror(errno));
}

TarWriter::~TarWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TarWriter::put(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw BadInput(path_.string() + ": write failed (disk full?): " + std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
    pos_ += static_cast<uint64_t>(w);
  }
}

void TarWriter::put_header(const TarMember& m, uint64_t size, char type) {
  std::string prefix, rest;
  const std::string name = m.is_dir && !m.name.ends_with("/") ? m.name + "/" : m.name;
  if (!split_name(name, prefix, rest)) {
    // A pax extended header carries the full name; the ustar one a truncated copy.
    const std::string rec = pax_record("path", name);
    const std::string base = name.substr(name.rfind('/', name.size() - 2) + 1);
    const Block x = header(("PaxHeaders/" + base).substr(0, 100), "", rec.size(), 0644, m.mtime, 'x');
    put(x.data(), x.size());
    put(rec.data(), rec.size());
    const Block zero{};
    put(zero.data(), (kRecord - rec.size() % kRecord) % kRecord);
    prefix.clear();
    rest = name.substr(0, 100);
  }
  header_pos_ = pos_;
  const Block h = header(rest, prefix, size, m.mode, m.mtime, type);
  put(h.data(), h.size());
  data_start_ = pos_;
}

void TarWriter::begin(const TarMember& m) {
  current_ = m.name;
  expected_ = m.is_dir ? 0 : m.size;
  written_ = 0;
  open_ = false;
  put_header(m, expected_, m.is_dir ? '5' : '0');
}

void TarWriter::begin_open(const TarMember& m) {
  if (m.is_dir) throw InternalError("begin_open on a folder");
  current_ = m.name;
  open_member_ = m;
  open_ = true;
  written_ = 0;
  put_header(m, 0, '0');
}

void TarWriter::write(const void* data, size_t n) {
  put(data, n);
  written_ += n;
}

void TarWriter::end() {
  if (!open_ && written_ != expected_)
    throw InternalError(path_.string() + ": member '" + current_ + "' got " + std::to_string(written_) +
                        " bytes, its header says " + std::to_string(expected_));
  const Block zero{};
  put(zero.data(), (kRecord - written_ % kRecord) % kRecord);
  if (open_) {
    std::string prefix, rest;
    if (!split_name(open_member_.name, prefix, rest)) rest = open_member_.name.substr(0, 100);
    const Block h = header(rest, prefix, written_, open_member_.mode, open_member_.mtime, '0');
    if (::pwrite(fd_, h.data(), h.size(), static_cast<off_t>(header_pos_)) != static_cast<ssize_t>(h.size()))
      throw BadInput(path_.string() + ": cannot update the header of '" + current_ + "': " + std::strerror(errno));
    open_ = false;
  }
}

void TarWriter::close() {
  const std::array<char, 2 * kRecord> eof{};
  put(eof.data(), eof.size());
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw BadInput(path_.string() + ": close failed: " + std::strerror(errno));
  }
  fd_ = -1;
}

void copy_member_data(TarReader& in, TarWriter& out, uint64_t size, const std::function<void(uint64_t)>& on_bytes) {
  std::vector<char> buf(kCopyBlock);
  uint64_t done = 0;
  for (;;) {
    const size_t got = in.read(buf.data(), buf.size());
    if (got == 0) break;
    out.write(buf.data(), got);
    done += got;
    if (on_bytes) on_bytes(got);
  }
  if (done != size)
    throw BadInput(in.label() + ": a member is truncated (" + std::to_string(done) + " of " + std::to_string(size) +
                   " bytes)");
}

}  // namespace llm2hef::core::har
