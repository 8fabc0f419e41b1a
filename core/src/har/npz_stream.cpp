#include "llm2hef/core/har/npz_stream.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>

#include "llm2hef/core/io/dims_text.hpp"
#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/core/io/npy_header.hpp"
#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

namespace fs = std::filesystem;

namespace {

constexpr size_t kBlock = 1 << 20;
constexpr uint64_t kMaxNpyHeader = 1 << 16;

// libarchive pulls the zip through this callback, which pulls from the tar.
struct Source {
  const std::function<size_t(void*, size_t)>* read;
  std::vector<char> buf = std::vector<char>(kBlock);
};

la_ssize_t pull(archive*, void* client, const void** out) {
  auto* s = static_cast<Source*>(client);
  *out = s->buf.data();
  try {
    return static_cast<la_ssize_t>((*s->read)(s->buf.data(), s->buf.size()));
  } catch (...) {
    return -1;  // the outer reader's error surfaces as a read failure
  }
}

struct ZipIn {
  archive* a = archive_read_new();
  Source src;
  std::string label;
  ZipIn(const std::function<size_t(void*, size_t)>& read, std::string l) : label(std::move(l)) {
    src.read = &read;
    archive_read_support_format_zip_streamable(a);
    if (archive_read_open(a, &src, nullptr, pull, nullptr) != ARCHIVE_OK) {
      // The destructor does not run for a constructor that throws.
      const char* m = archive_error_string(a);
      const std::string why = label + ": not a readable .npz (zip)" + (m ? std::string(": ") + m : std::string());
      archive_read_free(a);
      throw BadInput(why);
    }
  }
  ~ZipIn() { archive_read_free(a); }
  [[noreturn]] void fail(const std::string& what) const {
    const char* m = archive_error_string(a);
    throw BadInput(label + ": " + what + (m ? std::string(": ") + m : std::string()));
  }
  // Next entry name and size (-1 unknown), or false at the end.
  bool next(std::string& name, int64_t& size) {
    archive_entry* e = nullptr;
    const int rc = archive_read_next_header(a, &e);
    if (rc == ARCHIVE_EOF) return false;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) fail("corrupt .npz (zip)");
    const char* p = archive_entry_pathname(e);
    name = p ? p : "";
    if (archive_entry_filetype(e) != AE_IFREG) fail("entry '" + name + "' is not a regular file");
    size = archive_entry_size_is_set(e) ? archive_entry_size(e) : -1;
    return true;
  }
  size_t read(void* b, size_t n) {
    const la_ssize_t got = archive_read_data(a, b, n);
    if (got < 0) fail("cannot read an array's data");
    return static_cast<size_t>(got);
  }
};

struct ZipOut {
  archive* a = archive_write_new();
  const std::function<void(const void*, size_t)>* sink;
  std::string label;
  std::string error;  // what the sink threw, reported after libarchive unwinds
  ZipOut(const std::function<void(const void*, size_t)>& s, std::string l) : sink(&s), label(std::move(l)) {
    archive_write_set_format_zip(a);
    archive_write_zip_set_compression_store(a);
    archive_write_set_bytes_per_block(a, 0);  // no blocking: bytes go out as written
    if (archive_write_open(a, this, nullptr, push, nullptr) != ARCHIVE_OK) {
      const std::string why = error.empty() ? label + ": cannot start the zip" : error;
      archive_write_free(a);  // the destructor does not run for a constructor that throws
      throw BadInput(why);
    }
  }
  ~ZipOut() { archive_write_free(a); }
  static la_ssize_t push(archive*, void* client, const void* buff, size_t n) {
    auto* self = static_cast<ZipOut*>(client);
    try {
      (*self->sink)(buff, n);
    } catch (const std::exception& e) {
      self->error = e.what();
      return -1;
    }
    return static_cast<la_ssize_t>(n);
  }
  [[noreturn]] void fail(const std::string& what) const {
    if (!error.empty()) throw BadInput(error);
    const char* m = archive_error_string(a);
    throw BadInput(label + ": " + what + (m ? std::string(": ") + m : std::string()));
  }
  void begin(const std::string& name, uint64_t size) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(size));
    const int rc = archive_write_header(a, e);
    archive_entry_free(e);
    if (rc != ARCHIVE_OK) fail("cannot add '" + name + "'");
  }
  void write(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const la_ssize_t w = archive_write_data(a, c, n);
      if (w <= 0) fail("write failed");
      c += w;
      n -= static_cast<size_t>(w);
    }
  }
  void end() {
    if (archive_write_finish_entry(a) != ARCHIVE_OK) fail("cannot finish an entry");
  }
  void close() {
    if (archive_write_close(a) != ARCHIVE_OK) fail("cannot finish the zip");
  }
};

// Spooled arrays live next to the output, as `.llm2hef-npz-XXXXXX`: removed
// on scope exit or on a signal, and swept by the next run if the process was
// killed outright.
constexpr const char* kSpoolPrefix = ".llm2hef-npz-";

struct Spool {
  ScratchFile file;
  const fs::path& path;
  explicit Spool(const fs::path& dir) try : file(dir, kSpoolPrefix), path(file.path()) {
  } catch (const std::system_error&) {
    throw BadInput(dir.string() + ": cannot create a temporary file");
  }
};

std::string key_of(const std::string& entry) {
  return entry.size() > 4 && entry.ends_with(".npy") ? entry.substr(0, entry.size() - 4) : std::string();
}

void split_key(const std::string& key, std::string& layer, std::string& param) {
  const size_t slash = key.rfind('/');
  layer = slash == std::string::npos ? std::string() : key.substr(0, slash);
  param = slash == std::string::npos ? key : key.substr(slash + 1);
}

// `kernel:0` -> "kernel"
std::string param_base(const std::string& param) { return param.substr(0, param.find(':')); }

std::string shape_text(const std::vector<int64_t>& s) { return dims_text(s); }

// Reads exactly the .npy header from a sequential source.
NpyInfo read_header(const std::function<size_t(void*, size_t)>& read, const std::string& label, std::string& raw) {
  auto take = [&](size_t n) {
    const size_t start = raw.size();
    raw.resize(start + n);
    size_t got = 0;
    while (got < n) {
      const size_t g = read(raw.data() + start + got, n - got);
      if (g == 0) throw BadInput(label + ": truncated .npy header");
      got += g;
    }
  };
  take(10);
  if (raw.compare(0, 6, "\x93NUMPY") != 0) throw BadInput(label + ": not a .npy array");
  const unsigned major = static_cast<unsigned char>(raw[6]);
  uint64_t len = static_cast<unsigned char>(raw[8]) | (static_cast<uint64_t>(static_cast<unsigned char>(raw[9])) << 8);
  if (major >= 2) {
    take(2);
    len |= (static_cast<uint64_t>(static_cast<unsigned char>(raw[10])) << 16) |
           (static_cast<uint64_t>(static_cast<unsigned char>(raw[11])) << 24);
  } else if (major != 1) {
    throw BadInput(label + ": unsupported .npy version " + std::to_string(major));
  }
  if (len > kMaxNpyHeader) throw BadInput(label + ": .npy header of " + std::to_string(len) + " bytes; refused");
  take(static_cast<size_t>(len));
  return parse_npy_header(raw, label);
}

// An entry no edit touches, copied as it streams.
void copy_entry(ZipIn& in, ZipOut& out, const std::string& name, int64_t size, std::vector<char>& buf) {
  if (size < 0) in.fail("entry '" + name + "' has no size in its local header; cannot stream it");
  out.begin(name, static_cast<uint64_t>(size));
  uint64_t done = 0;
  for (size_t got; (got = in.read(buf.data(), buf.size())) > 0;) {
    out.write(buf.data(), got);
    done += got;
  }
  if (done != static_cast<uint64_t>(size)) in.fail("entry '" + name + "' is truncated");
  out.end();
}

// An array an edit copies or splits: its header read, its data spooled to a
// scratch file, so that it can be written out again, whole or in slices.
struct SpooledArray {
  Spool spool;
  std::string raw;  // the .npy header as read
  NpyInfo info;
  uint64_t data_bytes = 0, count = 1;

  SpooledArray(ZipIn& in, const fs::path& scratch, const std::string& where, std::vector<char>& buf) : spool(scratch) {
    auto src = [&](void* b, size_t n) { return in.read(b, n); };
    info = read_header(src, where, raw);
    {
      std::ofstream f(spool.path, std::ios::binary);
      for (size_t got; (got = in.read(buf.data(), buf.size())) > 0;) {
        f.write(buf.data(), static_cast<std::streamsize>(got));
        data_bytes += got;
      }
      if (!f) throw BadInput(spool.path.string() + ": write failed (disk full?)");
    }
    for (int64_t d : info.shape) count *= static_cast<uint64_t>(d);
    if (count * info.element_size != data_bytes)
      throw BadInput(where + ": " + std::to_string(data_bytes) + " data bytes, its shape " + shape_text(info.shape) +
                     " needs " + std::to_string(count * info.element_size));
  }

  void write_whole(ZipOut& out, const std::string& new_key, std::vector<char>& buf) const {
    out.begin(new_key + ".npy", raw.size() + data_bytes);
    out.write(raw.data(), raw.size());
    std::ifstream f(spool.path, std::ios::binary);
    for (;;) {
      f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      const auto got = f.gcount();
      if (got <= 0) break;
      out.write(buf.data(), static_cast<size_t>(got));
    }
    out.end();
  }

  // One array per shard, each the shard's columns of the last axis (`total`
  // wide in all).
  void write_slices(ZipOut& out, const WeightsEdit::Split& split, const std::string& param, int64_t total,
                    NpzRewriteReport& report) const {
    const uint64_t rows = count / static_cast<uint64_t>(total);
    const uint64_t row_bytes = static_cast<uint64_t>(total) * info.element_size;
    std::ifstream f(spool.path, std::ios::binary);
    int64_t begin = 0;
    for (size_t s = 0; s < split.shards.size(); ++s) {
      std::vector<int64_t> shape = info.shape;
      shape.back() = split.widths[s];
      const std::string hdr = npy_header(info.descr, shape);
      const uint64_t slice_bytes = static_cast<uint64_t>(split.widths[s]) * info.element_size;
      const std::string new_key = split.shards[s] + "/" + param;
      out.begin(new_key + ".npy", hdr.size() + rows * slice_bytes);
      out.write(hdr.data(), hdr.size());
      std::vector<char> row(slice_bytes);
      for (uint64_t r = 0; r < rows; ++r) {
        f.seekg(static_cast<std::streamoff>(r * row_bytes + static_cast<uint64_t>(begin) * info.element_size));
        f.read(row.data(), static_cast<std::streamsize>(slice_bytes));
        if (!f) throw BadInput(spool.path.string() + ": read failed");
        out.write(row.data(), row.size());
      }
      out.end();
      begin += split.widths[s];
      report.sliced.push_back(new_key);
    }
  }
};

}  // namespace

NpyInfo parse_npy_header(const std::string& raw, const std::string& label) {
  if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0) throw BadInput(label + ": not a .npy array");
  const unsigned major = static_cast<unsigned char>(raw[6]);
  size_t off = major >= 2 ? 12 : 10;
  if (raw.size() < off) throw BadInput(label + ": truncated .npy header");
  uint64_t len = static_cast<unsigned char>(raw[8]) | (static_cast<uint64_t>(static_cast<unsigned char>(raw[9])) << 8);
  if (major >= 2)
    len |= (static_cast<uint64_t>(static_cast<unsigned char>(raw[10])) << 16) |
           (static_cast<uint64_t>(static_cast<unsigned char>(raw[11])) << 24);
  if (raw.size() < off + len) throw BadInput(label + ": truncated .npy header");
  const std::string dict = raw.substr(off, static_cast<size_t>(len));
  NpyInfo info;
  info.header_bytes = off + len;
  const NpyHeaderFields fields = parse_npy_header_dict(dict, label);
  // A simple dtype: byte order, kind letter, 1-2 digit size (structured
  // arrays are not HAR weights).
  const std::string& d = fields.descr;
  const size_t kind = (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) ? 1 : 0;
  const bool simple = d.size() > kind + 1 && d.size() <= kind + 3 &&
                      std::isalpha(static_cast<unsigned char>(d[kind])) &&
                      std::all_of(d.begin() + static_cast<long>(kind) + 1, d.end(),
                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!simple) throw BadInput(label + ": .npy header has no simple 'descr' (structured arrays are not HAR weights)");
  info.descr = d;
  info.element_size = static_cast<size_t>(std::stoul(d.substr(kind + 1)));
  if (info.element_size == 0 || info.element_size > 16) throw BadInput(label + ": .npy element size out of range");
  if (fields.fortran_order) throw BadInput(label + ": Fortran-ordered .npy arrays are not supported");
  info.shape = fields.shape;
  return info;
}

void visit_npz(const std::function<size_t(void*, size_t)>& read, const std::string& label, const NpzVisitor& visit) {
  ZipIn in(read, label);
  std::string name;
  int64_t size = 0;
  while (in.next(name, size)) {
    const std::string key = key_of(name);
    if (key.empty()) continue;
    std::string raw;
    const std::string where = label + ": array '" + key + "'";
    auto src = [&](void* b, size_t n) { return in.read(b, n); };
    const NpyInfo info = read_header(src, where, raw);
    visit(key, info, src);
    std::vector<char> rest(kBlock);
    while (in.read(rest.data(), rest.size()) > 0) {
    }
  }
}

NpzRewriteReport rewrite_npz(const std::function<size_t(void*, size_t)>& read, const std::string& label,
                             const WeightsEdit& edit, const std::function<void(const void*, size_t)>& write,
                             const fs::path& scratch) {
  NpzRewriteReport report;
  sweep_stale_scratch(scratch, kSpoolPrefix);
  ZipIn in(read, label);
  ZipOut out(write, label + " (rewritten)");
  std::vector<char> buf(kBlock);
  std::set<std::string> split_kernels_seen;
  std::string name;
  int64_t size = 0;
  while (in.next(name, size)) {
    const std::string key = key_of(name);
    std::string layer, param;
    split_key(key, layer, param);
    const bool drop = !key.empty() && edit.dropped.count(layer);
    const auto copy_it = key.empty() ? edit.copies.end() : edit.copies.find(layer);
    const auto split_it = key.empty() ? edit.splits.end() : edit.splits.find(layer);
    if (drop) {
      report.dropped.push_back(key);
      continue;  // libarchive skips the data on the next header
    }
    if (copy_it == edit.copies.end() && split_it == edit.splits.end()) {
      copy_entry(in, out, name, size, buf);
      continue;
    }
    // Spool the array, then write what it becomes.
    const std::string where = label + ": array '" + key + "'";
    const SpooledArray array(in, scratch, where, buf);
    auto emit_whole = [&](const std::string& new_layer) {
      array.write_whole(out, new_layer + "/" + param, buf);
      if (new_layer != layer) report.added.push_back(new_layer + "/" + param);
    };
    if (copy_it != edit.copies.end()) {
      emit_whole(layer);
      for (const auto& target : copy_it->second) emit_whole(target);
      continue;
    }
    const WeightsEdit::Split& split = split_it->second;
    const std::string base = param_base(param);
    int64_t total = 0;
    for (int64_t w : split.widths) total += w;
    const bool whole_width = !array.info.shape.empty() && array.info.shape.back() == total;
    if (split.by_width ? !whole_width : base != "kernel" && base != "bias") {
      for (const auto& target : split.shards) emit_whole(target);
      continue;
    }
    if (!whole_width)
      throw BadInput(where + ": shape " + shape_text(array.info.shape) + ", expected a last axis of " +
                     std::to_string(total) + " to split into " + std::to_string(split.widths.size()) + " shards");
    if (base == "kernel") split_kernels_seen.insert(layer);
    array.write_slices(out, split, param, total, report);
  }
  for (const auto& [layer, split] : edit.splits)
    if (!split.by_width && !split_kernels_seen.count(layer))
      throw BadInput(label + ": has no array '" + layer + "/kernel:0' for the lm_head layer being split");
  out.close();
  return report;
}

}  // namespace llm2hef::core::har
