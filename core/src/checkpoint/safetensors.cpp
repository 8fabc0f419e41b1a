// The safetensors framing read here rather than by a library: we know of no
// C or C++ safetensors reader among Debian's packages (the reference one is
// Rust), and the format is small: a u64 length, a JSON header (parsed by
// nlohmann through sdk::parse_json, bounded, duplicate keys refused) and a
// data section. What is ours is checking every dtype, shape and offset
// against the file size before the mapping is trusted; a fuzz target runs it.
#include "llm2hef/core/checkpoint/safetensors.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "llm2hef/core/io/dims_text.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core {

// The file format is little-endian; we copy F32 data with memcpy.
static_assert(std::endian::native == std::endian::little, "llm2hef assumes a little-endian host");

namespace {

using Json = nlohmann::json;

struct DTypeSpec {
  const char* text;
  size_t size;
  sdk::DType dtype;
};

// Every dtype the safetensors format defines (as of format version 0.4).
constexpr DTypeSpec kDTypes[] = {
    {"BOOL", 1, sdk::DType::other},    {"U8", 1, sdk::DType::other},      {"I8", 1, sdk::DType::other},
    {"F8_E4M3", 1, sdk::DType::other}, {"F8_E5M2", 1, sdk::DType::other}, {"U16", 2, sdk::DType::other},
    {"I16", 2, sdk::DType::other},     {"F16", 2, sdk::DType::f16},       {"BF16", 2, sdk::DType::bf16},
    {"U32", 4, sdk::DType::other},     {"I32", 4, sdk::DType::other},     {"F32", 4, sdk::DType::f32},
    {"U64", 8, sdk::DType::other},     {"I64", 8, sdk::DType::other},     {"F64", 8, sdk::DType::other},
};

const DTypeSpec* find_dtype(const std::string& text) {
  for (const auto& d : kDTypes)
    if (text == d.text) return &d;
  return nullptr;
}

// A JSON value shown in an error message: short, whatever the input was.
std::string brief(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A non-negative integer that fits int64 (shape dimensions and offsets).
bool as_size(const Json& v, uint64_t& out) {
  if (!v.is_number_unsigned()) return false;
  out = v.get<uint64_t>();
  return out <= static_cast<uint64_t>(INT64_MAX);
}

std::string what_integer(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return "negative";
  if (v.is_number_unsigned()) return "too large";
  return "not an integer";
}

}  // namespace

uint64_t SafetensorsEntry::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

namespace {

// One tensor's header entry, checked: its dtype, a shape whose byte count
// fits, and data_offsets spanning exactly those bytes inside the data
// section (data_size bytes, starting at data_start in the file).
SafetensorsEntry parse_entry(const std::string& file, const std::string& name, const Json& v, uint64_t data_start,
                             uint64_t data_size) {
  const std::string where = file + ": tensor '" + name + "': ";
  if (!v.is_object()) throw BadInput(where + "header entry is not an object: " + brief(v));
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) throw BadInput(where + "header entry has no '" + key + "'");
  for (const auto& item : v.items())
    if (item.key() != "dtype" && item.key() != "shape" && item.key() != "data_offsets")
      throw BadInput(where + "unexpected key '" + item.key() + "' in the header entry");

  SafetensorsEntry e;
  e.name = name;
  const Json& dt = v.at("dtype");
  if (!dt.is_string()) throw BadInput(where + "dtype is not a string: " + brief(dt));
  e.dtype_text = dt.get<std::string>();
  const DTypeSpec* spec = find_dtype(e.dtype_text);
  if (!spec) throw BadInput(where + "unknown dtype '" + e.dtype_text + "'");
  e.dtype = spec->dtype;
  e.element_size = spec->size;

  const Json& shape = v.at("shape");
  if (!shape.is_array()) throw BadInput(where + "shape is not a list: " + brief(shape));
  if (shape.size() > kMaxTensorRank)
    throw BadInput(where + "shape has " + std::to_string(shape.size()) + " dimensions; a model weight has at most " +
                   std::to_string(kMaxTensorRank));
  uint64_t numel = 1;
  for (const Json& d : shape) {
    uint64_t dim = 0;
    if (!as_size(d, dim)) throw BadInput(where + "shape dimension " + brief(d) + " is " + what_integer(d));
    if (__builtin_mul_overflow(numel, dim, &numel) || numel > static_cast<uint64_t>(INT64_MAX))
      throw BadInput(where + "shape " + brief(shape) + " has too many elements");
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<uint64_t>(e.element_size), &nbytes))
    throw BadInput(where + "shape " + brief(shape) + " x " + e.dtype_text + " overflows a byte count");

  const Json& off = v.at("data_offsets");
  if (!off.is_array() || off.size() != 2)
    throw BadInput(where + "data_offsets is not a list of two integers: " + brief(off));
  uint64_t begin = 0, end = 0;
  if (!as_size(off[0], begin) || !as_size(off[1], end))
    throw BadInput(where + "data_offsets " + brief(off) + " are not two non-negative integers");
  if (begin > end) throw BadInput(where + "data_offsets " + brief(off) + " end before they begin");
  if (end - begin != nbytes)
    throw BadInput(where + "data_offsets " + brief(off) + " span " + std::to_string(end - begin) +
                   " bytes, but shape " + brief(shape) + " of " + e.dtype_text + " needs " + std::to_string(nbytes));
  if (end > data_size)
    throw BadInput(where + "data_offsets " + brief(off) + " run past the end of the data section (" +
                   std::to_string(data_size) + " bytes); truncated file?");
  e.begin = data_start + begin;
  e.end = data_start + end;
  return e;
}

// The entries, sorted by offset, refused when two share bytes.
void refuse_overlaps(const std::string& file, SafetensorsHeader& h) {
  std::sort(h.entries.begin(), h.entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // Two tensors sharing bytes would alias each other's weights. Empty tensors
  // occupy nothing and may sit anywhere.
  const SafetensorsEntry* last = nullptr;
  for (const auto& e : h.entries) {
    if (e.begin == e.end) continue;
    if (last && e.begin < last->end)
      throw BadInput(file + ": tensor '" + e.name + "': data_offsets [" + std::to_string(e.begin - h.data_start) +
                     ", " + std::to_string(e.end - h.data_start) + "] overlap those of tensor '" + last->name + "' [" +
                     std::to_string(last->begin - h.data_start) + ", " + std::to_string(last->end - h.data_start) +
                     "]");
    if (!last || e.end > last->end) last = &e;
  }
}

}  // namespace

SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> bytes, uint64_t file_size,
                                           const std::string& file) {
  if (file_size < 8 || bytes.size() < 8)
    throw BadInput(file + ": not a safetensors file: " + std::to_string(file_size) +
                   " bytes, too short for the 8-byte header length");
  SafetensorsHeader h;
  h.header_size = read_u64_le(bytes.data());
  if (h.header_size == 0) throw BadInput(file + ": safetensors header length is zero");
  if (h.header_size > kMaxSafetensorsHeader)
    throw BadInput(file + ": safetensors header length " + std::to_string(h.header_size) + " exceeds the limit of " +
                   std::to_string(kMaxSafetensorsHeader) + " bytes");
  if (h.header_size > file_size - 8)
    throw BadInput(file + ": safetensors header length " + std::to_string(h.header_size) +
                   " runs past the end of the file (" + std::to_string(file_size) + " bytes); truncated?");
  if (h.header_size > bytes.size() - 8)
    throw BadInput(file + ": only " + std::to_string(bytes.size()) + " bytes given for a header of " +
                   std::to_string(h.header_size) + " bytes");
  h.data_start = 8 + h.header_size;
  const uint64_t data_size = file_size - h.data_start;

  // Stricter than nlohmann alone: duplicate keys (it would keep the last
  // silently) and nesting deeper than any valid header (top object, entry,
  // shape) are refused, in one linear pass.
  sdk::JsonLimits limits;
  limits.max_depth = 3;
  limits.refuse_duplicate_keys = true;
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const Json doc = sdk::parse_json(std::string_view(text, h.header_size), file + ": safetensors header", limits);
  if (!doc.is_object()) throw BadInput(file + ": safetensors header is not a JSON object");

  for (const auto& [name, v] : doc.items()) {
    if (name == "__metadata__") {
      // Free-form string map (framework, format); nothing we need from it.
      if (!v.is_object()) throw BadInput(file + ": safetensors header: '__metadata__' is not an object");
      continue;
    }
    h.entries.push_back(parse_entry(file, name, v, h.data_start, data_size));
  }

  refuse_overlaps(file, h);
  return h;
}

SafetensorsFile::SafetensorsFile(const std::filesystem::path& path) : path_(path), file_(path) {
  const std::string label = path.string();
  header_ =
      parse_safetensors_header(file_.size() < 8 ? std::span<const uint8_t>() : file_.bytes(), file_.size(), label);
  release(0, header_.data_start);
  for (size_t i = 0; i < header_.entries.size(); ++i) index_.emplace(header_.entries[i].name, i);
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.entries[it->second];
}

std::span<const uint8_t> SafetensorsFile::raw(const SafetensorsEntry& e) const {
  return {file_.data() + e.begin, static_cast<size_t>(e.end - e.begin)};
}

void SafetensorsFile::release(uint64_t begin, uint64_t end) const { file_.release(begin, end); }

std::span<const char> SafetensorsFile::f32_rows(const SafetensorsEntry& e, int64_t row_begin, int64_t row_end,
                                                size_t& first_bad) const {
  first_bad = 0;
  if (e.dtype != sdk::DType::f32) return {};
  const int64_t rows = e.shape.empty() ? 1 : e.shape[0];
  if (row_begin < 0 || row_begin > row_end || row_end > rows)
    throw InternalError(path_.string() + ": tensor '" + e.name + "': rows [" + std::to_string(row_begin) + ", " +
                        std::to_string(row_end) + ") requested of " + std::to_string(rows));
  uint64_t row_size = 1;
  for (size_t i = 1; i < e.shape.size(); ++i) row_size *= static_cast<uint64_t>(e.shape[i]);
  const uint64_t count = static_cast<uint64_t>(row_end - row_begin) * row_size;
  const uint64_t first = e.begin + static_cast<uint64_t>(row_begin) * row_size * 4;
  first_bad = first_nonfinite_f32(file_.data() + first, count);
  return {reinterpret_cast<const char*>(file_.data() + first), static_cast<size_t>(count * 4)};
}

bool SafetensorsFile::maps(std::span<const char> bytes) const {
  const char* base = reinterpret_cast<const char*>(file_.data());
  return base && bytes.data() >= base && bytes.data() + bytes.size() <= base + file_.size();
}

void SafetensorsFile::release_lent(std::span<const char> bytes) const {
  const uint64_t begin = static_cast<uint64_t>(bytes.data() - reinterpret_cast<const char*>(file_.data()));
  release_with_margin(begin, begin + bytes.size());
}

size_t SafetensorsFile::read_rows(const SafetensorsEntry& e, int64_t row_begin, int64_t row_end,
                                  std::span<float> out) const {
  if (e.dtype == sdk::DType::other)
    throw Unsupported(path_.string() + ": tensor '" + e.name + "' has dtype " + e.dtype_text +
                      "; only F32, F16 and BF16 weights can be read");
  const int64_t rows = e.shape.empty() ? 1 : e.shape[0];
  int64_t row_size = 1;
  for (size_t i = 1; i < e.shape.size(); ++i) row_size *= e.shape[i];
  if (row_begin < 0 || row_begin > row_end || row_end > rows)
    throw InternalError(path_.string() + ": tensor '" + e.name + "': rows [" + std::to_string(row_begin) + ", " +
                        std::to_string(row_end) + ") requested of " + std::to_string(rows));
  const uint64_t count = static_cast<uint64_t>(row_end - row_begin) * static_cast<uint64_t>(row_size);
  if (out.size() != count)
    throw InternalError(path_.string() + ": tensor '" + e.name + "': output holds " + std::to_string(out.size()) +
                        " values, " + std::to_string(count) + " requested");

  const uint64_t esize = e.element_size;
  const uint64_t first = e.begin + static_cast<uint64_t>(row_begin) * static_cast<uint64_t>(row_size) * esize;
  // Convert in slices and drop each slice's pages as soon as it is copied, so
  // even one call over a whole multi-hundred-MB tensor maps only a slice.
  constexpr uint64_t kSliceValues = (8u << 20) / 4;
  uint64_t released = first;
  size_t first_bad = out.size();
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min<uint64_t>(kSliceValues, count - done);
    const size_t bad = convert_to_f32(e.dtype, file_.data() + first + done * esize, out.subspan(done, n));
    if (bad != n && first_bad == out.size()) first_bad = done + bad;
    done += n;
    // Release up to the last whole page of the slice; the straddling page is
    // freed with the next slice (or stays, being shared with the neighbour).
    const uint64_t page = MappedFile::page_size();
    const uint64_t upto = (first + done * esize) / page * page;
    if (upto > released) {
      release(released, upto);
      released = upto;
    }
  }
  const uint64_t last = first + count * esize;
  if (count > 0) release_with_margin(first, last);
  return first_bad;
}

void SafetensorsFile::release_with_margin(uint64_t begin, uint64_t end) const {
  // Edges and a margin included: a read fault maps the pages around it that
  // are in the page cache, pages a neighbour (another thread's slice, the
  // next tensor) may have dropped already, and they stayed mapped for good.
  // How far around: the kernel's fault-around (64 KB), or the whole folio
  // the page lies in where the page cache holds large folios (Linux 6.18,
  // ext4: a checkpoint just written, as after a download, is cached in folios
  // of up to 2 MB, and with a 64 KB margin peak RSS was 159-177 MiB on
  // Qwen2.5-0.5B against 105-119 MiB once the same file was read back). A
  // neighbour still reading a page dropped here faults it in again from the
  // page cache (the mapping is never written, so nothing is lost).
  constexpr uint64_t kMargin = 2u << 20;
  file_.release_covering(begin > kMargin ? begin - kMargin : 0, end + kMargin);
}

}  // namespace llm2hef::core
