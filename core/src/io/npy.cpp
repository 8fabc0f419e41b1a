#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/npy_header.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "llm2hef/core/io/atomic_output.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

int64_t count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace

std::string npy_header(const std::string& descr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += std::to_string(shape[i]) + (shape.size() == 1 ? "," : i + 1 < shape.size() ? ", " : "");
  dict += "), }";
  // magic(6) + version(2) + len(2) + dict + padding + '\n', total a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(dict.size() & 0xff);
  h += static_cast<char>((dict.size() >> 8) & 0xff);
  return h + dict;
}

std::string npy_header(NpyType type, const std::vector<int64_t>& shape) {
  return npy_header(type == NpyType::f32 ? "<f4" : "<i8", shape);
}

NpyWriter::NpyWriter(const std::filesystem::path& path, const std::vector<int64_t>& shape, sdk::Writeback writeback)
    : path_(path), out_(path, writeback), expected_(count(shape)) {
  const std::string header = npy_header(NpyType::f32, shape);
  out_.append(header);
}

// Little-endian hosts only (x86_64, aarch64): float32 bytes as in memory.
void NpyWriter::append(std::span<const float> values) {
  out_.append(std::span<const char>(reinterpret_cast<const char*>(values.data()), values.size_bytes()));
  written_ += static_cast<int64_t>(values.size());
}

void NpyWriter::append_block(size_t values, const std::function<void(std::span<float>)>& fill) {
  const uint64_t at = out_.size();
  const std::span<char> bytes = out_.acquire_block(values * sizeof(float));
  try {
    fill({reinterpret_cast<float*>(bytes.data()), values});
  } catch (...) {
    out_.abandon_block();
    throw;
  }
  out_.submit_block({{at, bytes.data(), bytes.size()}});
  written_ += static_cast<int64_t>(values);
}

void NpyWriter::finish() {
  out_.close();
  if (written_ != expected_)
    throw InternalError(path_.string() + ": wrote " + std::to_string(written_) + " values, expected " +
                        std::to_string(expected_));
}

void write_npy(const std::filesystem::path& path, const std::vector<int64_t>& shape, std::span<const float> values) {
  NpyWriter w(path, shape);
  w.append(values);
  w.finish();
}

NpyReader::NpyReader(const std::filesystem::path& path) : path_(path), file_(path) {
  unsigned char magic[12] = {};
  if (file_.size() < 10) throw BadInput(path.string() + ": not a .npy file");
  read_at(0, magic, 10, "magic");
  if (std::string(reinterpret_cast<const char*>(magic), 6) != "\x93NUMPY")
    throw BadInput(path.string() + ": not a .npy file");
  uint64_t header_len = magic[8] | (static_cast<unsigned>(magic[9]) << 8);
  const int major = magic[6];
  if (major == 1) {
    data_offset_ = 10 + header_len;
  } else {
    read_at(10, magic + 10, 2, "header length");
    header_len |= (static_cast<uint64_t>(magic[10]) << 16) | (static_cast<uint64_t>(magic[11]) << 24);
    data_offset_ = 12 + header_len;
  }
  if (header_len > (1u << 20)) throw BadInput(path.string() + ": .npy header too large");
  std::string dict(header_len, '\0');
  read_at(data_offset_ - header_len, dict.data(), dict.size(), "header");
  const NpyHeaderFields fields = parse_npy_header_dict(dict, path.string());
  if (fields.descr == "<f4" || fields.descr == "|f4" || fields.descr == "f4")
    type_ = NpyType::f32;
  else if (fields.descr == "<i8" || fields.descr == "|i8" || fields.descr == "i8")
    type_ = NpyType::i64;
  else
    throw BadInput(path.string() + ": unsupported .npy dtype '" + fields.descr + "' (expected <f4 or <i8)");
  if (fields.fortran_order) throw BadInput(path.string() + ": Fortran-ordered .npy is not supported");
  shape_ = fields.shape;
  row_size_ = 1;
  for (size_t i = 1; i < shape_.size(); ++i) row_size_ *= shape_[i];
  const uint64_t elem = type_ == NpyType::f32 ? 4 : 8;
  const uint64_t need = data_offset_ + static_cast<uint64_t>(count(shape_)) * elem;
  if (file_.size() < need)
    throw BadInput(path.string() + ": file is shorter than its header's shape " + std::to_string(need) + " bytes");
}

void NpyReader::read_at(uint64_t offset, void* out, size_t n, const char* what) const {
  auto* p = static_cast<char*>(out);
  for (size_t done = 0; done < n;) {
    const ssize_t got = ::pread(file_.fd(), p + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw BadInput(path_.string() + ": read failed: " + std::strerror(errno));
    if (got == 0) throw BadInput(path_.string() + ": truncated .npy " + what);
    done += static_cast<size_t>(got);
  }
}

void NpyReader::read_rows(int64_t begin, int64_t end, std::span<float> out) {
  if (type_ != NpyType::f32) throw BadInput(path_.string() + ": expected a float32 array");
  const int64_t rows = shape_.empty() ? 1 : shape_[0];
  if (begin < 0 || end > rows || begin > end || static_cast<int64_t>(out.size()) != (end - begin) * row_size_)
    throw InternalError(path_.string() + ": bad row range");
  read_at(data_offset_ + static_cast<uint64_t>(begin * row_size_) * 4, out.data(), out.size_bytes(), "data");
}

std::vector<float> NpyReader::read_all() {
  std::vector<float> out(static_cast<size_t>(count(shape_)));
  read_rows(0, shape_.empty() ? 1 : shape_[0], out);
  return out;
}

NpzMember npz_f32(std::string name, std::vector<int64_t> shape, std::span<const float> values) {
  return {std::move(name), NpyType::f32, std::move(shape),
          std::string(reinterpret_cast<const char*>(values.data()), values.size_bytes())};
}

NpzMember npz_i64(std::string name, std::vector<int64_t> shape, std::span<const int64_t> values) {
  return {std::move(name), NpyType::i64, std::move(shape),
          std::string(reinterpret_cast<const char*>(values.data()), values.size_bytes())};
}

void write_npz(const std::filesystem::path& path, const std::vector<NpzMember>& members, bool replace) {
  // Build the archive in memory (inputs are small), then write it atomically.
  std::string zip;
  archive* a = archive_write_new();
  archive_write_set_format_zip(a);
  archive_write_zip_set_compression_store(a);
  archive_write_set_bytes_in_last_block(a, 1);
  auto writer = [](archive*, void* client, const void* buff, size_t n) -> la_ssize_t {
    static_cast<std::string*>(client)->append(static_cast<const char*>(buff), n);
    return static_cast<la_ssize_t>(n);
  };
  if (archive_write_open(a, &zip, nullptr, writer, nullptr) != ARCHIVE_OK) {
    std::string err = archive_error_string(a) ? archive_error_string(a) : "unknown";
    archive_write_free(a);
    throw InternalError("npz: " + err);
  }
  for (const auto& m : members) {
    std::string content = npy_header(m.type, m.shape) + m.bytes;
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, (m.name + ".npy").c_str());
    archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, content.data(), content.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
  write_file_atomic(path, zip, replace);
}

}  // namespace llm2hef::core
