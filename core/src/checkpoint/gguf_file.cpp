// The GGUF framing, read from its specification (ggml-org/ggml docs/gguf.md)
// rather than by a library: Debian packages no GGUF reader, and what matters
// here is that every count, length, type and offset is checked against the
// bytes that are really there before anything is allocated or mapped.
#include "llm2hef/core/checkpoint/gguf_file.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

static_assert(std::endian::native == std::endian::little, "llm2hef assumes a little-endian host");

namespace {

using OJson = nlohmann::ordered_json;

// gguf-py constants.py GGML_QUANT_SIZES (block size, bytes per block).
constexpr GgmlType kTypes[] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},          {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, true},       {6, "Q5_0", 32, 22, true},       {7, "Q5_1", 32, 24, true},
    {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 40, false},      {10, "Q2_K", 256, 84, true},
    {11, "Q3_K", 256, 110, true},    {12, "Q4_K", 256, 144, true},    {13, "Q5_K", 256, 176, true},
    {14, "Q6_K", 256, 210, true},    {15, "Q8_K", 256, 292, false},   {16, "IQ2_XXS", 256, 66, false},
    {17, "IQ2_XS", 256, 74, false},  {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, false},   {21, "IQ3_S", 256, 110, false},  {22, "IQ2_S", 256, 82, false},
    {23, "IQ4_XS", 256, 136, false}, {24, "I8", 1, 1, false},         {25, "I16", 1, 2, false},
    {26, "I32", 1, 4, false},        {27, "I64", 1, 8, false},        {28, "F64", 1, 8, false},
    {29, "IQ1_M", 256, 56, false},   {30, "BF16", 1, 2, true},        {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false},   {39, "MXFP4", 32, 17, false},    {40, "NVFP4", 64, 36, false},
    {41, "Q1_0", 128, 18, false},
};

// gguf.md "gguf_metadata_value_type".
enum ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
constexpr const char* kValueTypeNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                           "bool",  "string", "array",  "uint64", "int64",  "float64"};

// Bytes the smallest value of a type occupies: what an array count is checked
// against before anything is allocated for it.
uint64_t min_value_size(uint32_t type) {
  switch (type) {
    case kU8:
    case kI8:
    case kBool: return 1;
    case kU16:
    case kI16: return 2;
    case kU32:
    case kI32:
    case kF32: return 4;
    case kString: return 8;  // its u64 length
    case kArray: return 12;  // u32 type + u64 count
    default: return 8;
  }
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Reads little-endian values out of the header, never past its end.
class Cursor {
 public:
  Cursor(std::span<const uint8_t> bytes, std::string file) : bytes_(bytes), file_(std::move(file)) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return bytes_.size() - pos_; }
  const std::string& file() const { return file_; }

  template <typename T>
  T get(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // gguf.md "gguf_string_t": u64 length, then that many bytes (no NUL).
  std::string string(const std::string& what) {
    const uint64_t n = get<uint64_t>(what + " (string length)");
    if (n > left())
      throw BadInput(file_ + ": " + what + ": string length " + std::to_string(n) + " runs past the end of the " +
                     std::to_string(bytes_.size()) + "-byte file; truncated or corrupt?");
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

  void need(uint64_t n, const std::string& what) const {
    if (n > left())
      throw BadInput(file_ + ": " + what + ": needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                     ", but the file ends at " + std::to_string(bytes_.size()) + "; truncated?");
  }

 private:
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  std::string file_;
};

struct MetadataReader {
  Cursor& c;
  uint64_t values = 0;

  std::string type_name(uint32_t type) const {
    return type < 13 ? kValueTypeNames[type] : "type " + std::to_string(type);
  }

  void count_value(const std::string& key) {
    if (++values > kMaxGgufMetadataValues)
      throw BadInput(c.file() + ": metadata key '" + key + "': the metadata holds more than " +
                     std::to_string(kMaxGgufMetadataValues) + " values, the limit");
  }

  OJson value(uint32_t type, const std::string& key, uint32_t depth, std::string& type_text) {
    count_value(key);
    const std::string what = "metadata key '" + key + "'";
    switch (type) {
      case kU8: type_text += "uint8"; return c.get<uint8_t>(what);
      case kI8: type_text += "int8"; return c.get<int8_t>(what);
      case kU16: type_text += "uint16"; return c.get<uint16_t>(what);
      case kI16: type_text += "int16"; return c.get<int16_t>(what);
      case kU32: type_text += "uint32"; return c.get<uint32_t>(what);
      case kI32: type_text += "int32"; return c.get<int32_t>(what);
      case kU64: type_text += "uint64"; return c.get<uint64_t>(what);
      case kI64: type_text += "int64"; return c.get<int64_t>(what);
      case kF32: type_text += "float32"; return static_cast<double>(c.get<float>(what));
      case kF64: type_text += "float64"; return c.get<double>(what);
      case kBool: {
        type_text += "bool";
        const uint8_t b = c.get<uint8_t>(what);
        // gguf.md: "1-byte value where 0 is false and 1 is true. Anything else is invalid".
        if (b > 1) throw BadInput(c.file() + ": " + what + ": bool value " + std::to_string(b) + " is neither 0 nor 1");
        return b == 1;
      }
      case kString: type_text += "string"; return c.string(what);
      case kArray: {
        if (depth >= kMaxGgufArrayDepth)
          throw BadInput(c.file() + ": " + what + ": arrays nested deeper than " + std::to_string(kMaxGgufArrayDepth));
        const uint32_t elem = c.get<uint32_t>(what + " (array type)");
        if (elem > kF64)
          throw BadInput(c.file() + ": " + what + ": unknown array element type " + std::to_string(elem));
        const uint64_t n = c.get<uint64_t>(what + " (array length)");
        if (n > kMaxGgufArrayElements)
          throw BadInput(c.file() + ": " + what + ": array of " + std::to_string(n) +
                         " elements exceeds the limit of " + std::to_string(kMaxGgufArrayElements));
        if (n > c.left() / min_value_size(elem))
          throw BadInput(c.file() + ": " + what + ": array of " + std::to_string(n) + " " + type_name(elem) +
                         " values runs past the end of the file; truncated or corrupt?");
        type_text += "array of ";
        OJson a = OJson::array();
        a.get_ref<OJson::array_t&>().reserve(static_cast<size_t>(n));
        std::string elem_text;
        for (uint64_t i = 0; i < n; ++i) {
          elem_text.clear();
          a.push_back(value(elem, key, depth + 1, elem_text));
        }
        if (n == 0) elem_text = type_name(elem);
        type_text += elem_text;
        return a;
      }
      default: throw BadInput(c.file() + ": " + what + ": unknown value type " + std::to_string(type));
    }
  }
};

uint64_t checked_numel(const std::vector<uint64_t>& ne, const std::string& where) {
  uint64_t n = 1;
  for (uint64_t d : ne)
    if (__builtin_mul_overflow(n, d, &n) || n > static_cast<uint64_t>(INT64_MAX))
      throw BadInput(where + "dimensions have too many elements");
  return n;
}

std::string dims_text(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

}  // namespace

const GgmlType* find_ggml_type(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string dequantized_type_names() {
  std::string s;
  for (const auto& t : kTypes)
    if (t.dequantized) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

uint64_t GgufTensorInfo::numel() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

std::vector<int64_t> GgufTensorInfo::torch_shape() const {
  std::vector<int64_t> s;
  for (auto it = ne.rbegin(); it != ne.rend(); ++it) s.push_back(static_cast<int64_t>(*it));
  return s;
}

namespace {

// The key-value pairs, in file order; a repeated or empty key is refused.
void read_metadata(Cursor& c, uint64_t n_kv, const std::string& file, GgufHeader& h) {
  MetadataReader meta{c};
  h.metadata = OJson::object();
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata key " + std::to_string(i));
    if (key.empty()) throw BadInput(file + ": metadata key " + std::to_string(i) + " is empty");
    if (h.metadata.contains(key)) throw BadInput(file + ": metadata key '" + key + "' appears twice");
    const uint32_t type = c.get<uint32_t>("metadata key '" + key + "' (value type)");
    std::string type_text;
    OJson v = meta.value(type, key, 0, type_text);
    h.metadata_types.emplace(key, type_text);
    h.metadata[key] = std::move(v);
  }
}

// gguf.md "general.alignment: uint32 ... must be a multiple of 8" (and a
// power of two, as ggml's GGML_PAD assumes).
void read_alignment(const std::string& file, GgufHeader& h) {
  auto it = h.metadata.find("general.alignment");
  if (it == h.metadata.end()) return;
  if (h.metadata_types["general.alignment"] != "uint32")
    throw BadInput(file + ": metadata key 'general.alignment' is a " + h.metadata_types["general.alignment"] +
                   ", expected uint32");
  const uint64_t a = it->get<uint64_t>();
  if (a == 0 || !std::has_single_bit(a) || a % 8 != 0)
    throw BadInput(file + ": metadata key 'general.alignment' is " + std::to_string(a) +
                   ", expected a power of two that is a multiple of 8");
  h.alignment = a;
}

// Tensor info `i`: name, dimensions, type and offset, each checked. Its `end`
// holds the data's size in bytes until place_tensors makes it absolute.
GgufTensorInfo read_tensor_info(Cursor& c, uint64_t i, uint64_t alignment, const std::string& file,
                                std::set<std::string, std::less<>>& names) {
  GgufTensorInfo t;
  t.name = c.string("tensor info " + std::to_string(i) + " (name)");
  const std::string where = file + ": tensor '" + t.name + "': ";
  if (t.name.empty()) throw BadInput(file + ": tensor info " + std::to_string(i) + " has an empty name");
  if (t.name.size() > kMaxGgufTensorName)
    throw BadInput(where + "name is " + std::to_string(t.name.size()) + " bytes, longer than the " +
                   std::to_string(kMaxGgufTensorName) + " the format allows");
  if (!names.insert(t.name).second) throw BadInput(where + "appears twice in the tensor infos");
  const uint32_t n_dims = c.get<uint32_t>("tensor '" + t.name + "' (n_dims)");
  if (n_dims == 0 || n_dims > kMaxGgufDims)
    throw BadInput(where + "has " + std::to_string(n_dims) + " dimensions; 1 to " + std::to_string(kMaxGgufDims) +
                   " are allowed");
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t v = c.get<uint64_t>("tensor '" + t.name + "' (dimensions)");
    if (v == 0 || v > static_cast<uint64_t>(INT64_MAX))
      throw BadInput(where + "dimension " + std::to_string(d) + " is " + std::to_string(v));
    t.ne.push_back(v);
  }
  const uint32_t type = c.get<uint32_t>("tensor '" + t.name + "' (type)");
  t.type = find_ggml_type(type);
  if (!t.type) throw BadInput(where + "unknown ggml type " + std::to_string(type));
  t.offset = c.get<uint64_t>("tensor '" + t.name + "' (offset)");
  const uint64_t numel = checked_numel(t.ne, where);
  if (t.ne[0] % t.type->block_size != 0)
    throw BadInput(where + "row length " + std::to_string(t.ne[0]) + " is not a multiple of " + t.type->name +
                   "'s block of " + std::to_string(t.type->block_size) + " values");
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel / t.type->block_size, static_cast<uint64_t>(t.type->type_size), &nbytes))
    throw BadInput(where + "dimensions " + dims_text(t.ne) + " overflow a byte count");
  if (t.offset % alignment != 0)
    throw BadInput(where + "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment (" +
                   std::to_string(alignment) + ")");
  t.end = nbytes;  // size for now; made absolute by place_tensors
  return t;
}

// gguf.md: padding to the alignment, then the data section. Each tensor's
// [begin, end) becomes absolute and must lie inside the file.
void place_tensors(uint64_t header_end, uint64_t file_size, const std::string& file, GgufHeader& h) {
  h.data_start = (header_end + h.alignment - 1) / h.alignment * h.alignment;
  if (h.data_start > file_size && !h.tensors.empty())
    throw BadInput(file + ": the data section would start at " + std::to_string(h.data_start) +
                   ", past the end of the " + std::to_string(file_size) + "-byte file; truncated?");
  const uint64_t data_size = file_size > h.data_start ? file_size - h.data_start : 0;
  for (auto& t : h.tensors) {
    const uint64_t nbytes = t.end;
    if (t.offset > data_size || nbytes > data_size - t.offset)
      throw BadInput(file + ": tensor '" + t.name + "': data [" + std::to_string(t.offset) + ", +" +
                     std::to_string(nbytes) + ") runs past the end of the data section (" + std::to_string(data_size) +
                     " bytes); truncated file?");
    t.begin = h.data_start + t.offset;
    t.end = t.begin + nbytes;
  }
}

// Two tensors sharing bytes would alias each other's weights.
void require_disjoint_tensors(const std::string& file, const GgufHeader& h) {
  std::vector<const GgufTensorInfo*> by_offset;
  for (const auto& t : h.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    if (by_offset[i]->begin < by_offset[i - 1]->end)
      throw BadInput(file + ": tensor '" + by_offset[i]->name + "': data at offset " +
                     std::to_string(by_offset[i]->offset) + " overlaps that of tensor '" + by_offset[i - 1]->name +
                     "'");
}

}  // namespace

GgufHeader parse_gguf_header(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& file) {
  if (bytes.size() > file_size) bytes = bytes.first(static_cast<size_t>(file_size));
  Cursor c(bytes, file);
  if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
    throw BadInput(file + ": not a GGUF file (it does not start with the magic bytes \"GGUF\")");
  c.get<uint32_t>("magic");
  GgufHeader h;
  h.version = c.get<uint32_t>("version");
  // Version 1 had 32-bit counts and lengths; 2 and 3 share this layout (3
  // added big-endian files, which announce themselves by a swapped version).
  if (h.version == 0x02000000u || h.version == 0x03000000u)
    throw BadInput(file + ": big-endian GGUF file (version " + hex32(h.version) +
                   "); only little-endian files are read");
  if (h.version != 2 && h.version != 3)
    throw BadInput(file + ": GGUF version " + std::to_string(h.version) + " is not supported (2 and 3 are)");
  const uint64_t n_tensors = c.get<uint64_t>("tensor count");
  const uint64_t n_kv = c.get<uint64_t>("metadata key-value count");
  // Each key-value pair needs at least a key length, a type and one byte;
  // each tensor info a name length, n_dims, a type and an offset.
  if (n_kv > c.left() / 13)
    throw BadInput(file + ": metadata key-value count " + std::to_string(n_kv) +
                   " cannot fit in the file; truncated or corrupt?");
  if (n_tensors > c.left() / 24)
    throw BadInput(file + ": tensor count " + std::to_string(n_tensors) +
                   " cannot fit in the file; truncated or corrupt?");

  read_metadata(c, n_kv, file, h);
  read_alignment(file, h);
  std::set<std::string, std::less<>> names;
  for (uint64_t i = 0; i < n_tensors; ++i) h.tensors.push_back(read_tensor_info(c, i, h.alignment, file, names));
  place_tensors(c.pos(), file_size, file, h);
  require_disjoint_tensors(file, h);
  return h;
}

GgufFile::GgufFile(const std::filesystem::path& path) : path_(path), file_(path) {
  const std::string label = path.string();
  if (file_.size() == 0) throw BadInput(label + ": empty file, not a GGUF file");
  header_ = parse_gguf_header(file_.bytes(), file_.size(), label);
  release(0, header_.data_start);
  for (size_t i = 0; i < header_.tensors.size(); ++i) index_.emplace(header_.tensors[i].name, i);
}

std::string GgufFile::metadata_type(std::string_view key) const {
  auto it = header_.metadata_types.find(key);
  return it == header_.metadata_types.end() ? std::string() : it->second;
}

const GgufTensorInfo* GgufFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &header_.tensors[it->second];
}

std::span<const uint8_t> GgufFile::raw(const GgufTensorInfo& t) const {
  return {file_.data() + t.begin, static_cast<size_t>(t.end - t.begin)};
}

void GgufFile::release(uint64_t begin, uint64_t end) const { file_.release(begin, end); }

}  // namespace llm2hef::core
