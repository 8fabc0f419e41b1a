#include "llm2hef/core/checkpoint/gguf_checkpoint.hpp"

#include "gguf/family.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <system_error>

#include "llm2hef/core/checkpoint/checkpoint_files.hpp"
#include "llm2hef/core/checkpoint/gguf_config.hpp"
#include "llm2hef/core/checkpoint/gguf_dequant.hpp"
#include "llm2hef/core/checkpoint/gguf_file.hpp"
#include "llm2hef/core/checkpoint/gguf_names.hpp"
#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/core/io/temp_dir.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// The scratch folders' names in $TMPDIR: llm2hef-gguf-XXXXXX.
constexpr const char* kGgufScratchPrefix = "llm2hef-gguf-";

bool has_gguf_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char ch) { return std::tolower(ch); });
  return ext == ".gguf";
}

bool starts_with_magic(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

// llama.cpp's split naming (llama_split_path / gguf-split): PREFIX-00001-of-00003.gguf.
const std::regex& split_pattern() {
  static const std::regex re(R"(^(.*)-([0-9]{5})-of-([0-9]{5})\.gguf$)", std::regex::icase);
  return re;
}

// The files of the checkpoint at `path`: the file itself, or every part of
// its split set (in order), or the single set of .gguf files in a folder.
std::vector<fs::path> gguf_parts(const fs::path& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(path, ec)) {
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (has_gguf_extension(e.path()) && !fs::is_directory(e.path(), ec) && checkpoint_has_file(path, e.path()))
        found.push_back(e.path());
    std::sort(found.begin(), found.end());
    if (found.empty()) throw BadInput(path.string() + ": no .gguf file in this folder");
    std::set<std::string> sets;
    for (const auto& f : found) {
      std::smatch m;
      const std::string name = f.filename().string();
      sets.insert(std::regex_match(name, m, split_pattern()) ? m[1].str() + " (split)" : name);
    }
    if (sets.size() > 1) {
      std::string list;
      for (const auto& f : found) list += "\n  " + f.filename().string();
      throw BadInput(path.string() + ": holds more than one GGUF model; pass the file to convert:" + list);
    }
    file = found.front();
  }
  std::smatch m;
  const std::string name = file.filename().string();
  if (!std::regex_match(name, m, split_pattern())) return {file};
  const int count = std::stoi(m[3].str());
  if (count < 1) throw BadInput(file.string() + ": split file name says 0 parts");
  std::vector<fs::path> parts;
  char buf[32];
  for (int i = 1; i <= count; ++i) {
    std::snprintf(buf, sizeof buf, "-%05d-of-%05d", i, count);
    const fs::path part = file.parent_path() / (m[1].str() + buf + ".gguf");
    if (!is_present_file(part))
      throw BadInput(file.string() + ": part " + std::to_string(i) + " of " + std::to_string(count) + " (" +
                     part.string() + ") is missing");
    parts.push_back(part);
  }
  return parts;
}

// Refuses (Unsupported) a checkpoint holding any tensor of a type llm2hef
// does not dequantize. Run when the checkpoint is opened, before the config
// is built or a slot made, rather than when a tensor is read: inspect reads
// no weights, and must refuse the same files export does; and export then
// refuses before writing anything.
// What to get instead: the lossless files first, then Q8_0, whose second
// rounding (to A8W4 on the chip) costs least of the quantized types read.
// Shared by inspect and export, which both stop here.
constexpr const char* kGetAnotherFile =
    "Get the model as an F16 or BF16 GGUF (lossless), a Q8_0 GGUF, or its Hugging Face folder "
    "(config.json and safetensors) instead";

void refuse_undequantized_tensors(const std::vector<std::unique_ptr<GgufFile>>& files) {
  const GgufFile* first_file = nullptr;
  const GgufTensorInfo* first = nullptr;
  std::map<std::string, int> refused;  // type -> tensors
  int count = 0;
  for (const auto& f : files)
    for (const auto& t : f->tensors()) {
      if (t.type->dequantized) continue;
      if (!first) first_file = f.get(), first = &t;
      ++refused[t.type->name];
      ++count;
    }
  if (!first) return;
  std::string types;
  for (const auto& [type, n] : refused) types += (types.empty() ? "" : ", ") + std::to_string(n) + " " + type;
  throw Unsupported(first_file->path().string() + ": tensor '" + first->name + "' has type " + first->type->name +
                    ", which llm2hef does not dequantize (it reads " + dequantized_type_names() + ")" +
                    (count > 1 ? "; tensors of such types: " + types : std::string()) + ". " + kGetAnotherFile);
}

// The model's name as its metadata gives it, not as its file is named:
// llama.cpp's naming convention (ggml docs/gguf.md, "GGUF Naming Convention")
// builds a file name from general.basename, size_label and finetune, then
// version and the weights' encoding ("Q4_1"), which names the file, not the
// model. So: basename with its size label and fine-tune, else general.name,
// else empty (the caller falls back on the file's name).
std::string name_from_metadata(const GgufMetadata& meta) {
  if (auto base = meta.find_string("general.basename"); base && !base->empty()) {
    std::string name = *base;
    for (const char* key : {"general.size_label", "general.finetune"})
      if (auto part = meta.find_string(key); part && !part->empty()) name += "-" + *part;
    return name;
  }
  return meta.find_string("general.name").value_or("");
}

sdk::DType sdk_dtype(const GgmlType& t) {
  switch (t.id) {
    case 0: return sdk::DType::f32;
    case 1: return sdk::DType::f16;
    case 30: return sdk::DType::bf16;
    default: return sdk::DType::other;
  }
}

class GgufCheckpoint final : public CheckpointReader {
 public:
  GgufCheckpoint(const fs::path& path, NonFinitePolicy nonfinite);

  const fs::path& dir() const override { return path_; }
  const sdk::JsonFile& config() const override { return config_; }
  const sdk::JsonFile& generation_config() const override { return generation_config_; }
  const sdk::JsonFile& tokenizer_config() const override { return tokenizer_config_; }
  fs::path tokenizer_json() const override {
    if (tokenizer_json_.empty() && !tokenizer_error_.empty()) throw BadInput(tokenizer_error_);
    return tokenizer_json_;
  }

  bool has(std::string_view tensor) const override { return slots_.find(tensor) != slots_.end(); }
  const sdk::TensorInfo& info(std::string_view tensor) const override { return slot(tensor).info; }
  std::vector<std::string> tensor_names() const override;
  void read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end, std::span<float> out) const override;

  std::vector<NonFiniteWeight> nonfinite_weights() const override { return nonfinite_.all(); }
  std::vector<std::string> reading_notes() const override { return notes_; }
  std::string own_model_name() const override;
  std::string tokenizer_config_source(const std::string& source) const override;

 private:
  struct Slot {
    sdk::TensorInfo info;
    const GgufFile* file = nullptr;
    const GgufTensorInfo* stored = nullptr;
    GgufTransform transform = GgufTransform::none;
    std::vector<int64_t> row_source;  // HF row -> stored row (rows of info.row_size()); empty: the same row
    uint64_t flat_base = 0;           // first stored element (split_heads, split_qkv)
  };

  const Slot& slot(std::string_view tensor) const;
  const GgufTensorInfo* find_stored(std::string_view name, const GgufFile** file = nullptr) const;
  std::vector<float> read_stored(std::string_view name) const;
  void read_flat(const Slot& s, uint64_t first, uint64_t last, float* out) const;
  void add_slots(const GgufArch& arch, int64_t blocks, const std::string& block_count_key);
  // The slots one stored tensor gives under its transform: itself, one per
  // head (split_heads), or q, k and v (split_qkv); BadInput naming `where`
  // when its shape does not fit the heads of the config.
  std::vector<Slot> transformed(Slot s, const GgufNameMatch& m, const std::string& where) const;
  void setup_tokenizer(const fs::path& folder, const nlohmann::ordered_json& metadata);

  fs::path path_;
  std::vector<std::unique_ptr<GgufFile>> files_;
  sdk::JsonFile config_, generation_config_, tokenizer_config_;
  fs::path tokenizer_json_;
  std::string tokenizer_error_;
  // Holds tokenizer.json built from the metadata; made when first needed.
  std::optional<ScratchDir> staging_;
  std::map<std::string, Slot, std::less<>> slots_;
  std::vector<std::string> notes_;
  std::string metadata_name_;
  std::string tokenizer_config_origin_;  // where tokenizer_config_ (and so the chat template) came from
  bool tokenizer_config_from_metadata_ = false;
  NonFiniteLog nonfinite_;
};

GgufCheckpoint::GgufCheckpoint(const fs::path& path, NonFinitePolicy nonfinite) : path_(path), nonfinite_(nonfinite) {
  const std::vector<fs::path> parts = gguf_parts(path);
  for (const auto& p : parts) files_.push_back(std::make_unique<GgufFile>(p));
  const GgufFile& first = *files_.front();
  const std::string origin = first.path().string();

  // Split sets: gguf-split writes split.no (0-based), split.count and
  // split.tensors.count into every part; the first part holds the model's
  // metadata (llama.cpp examples/gguf-split).
  if (files_.size() > 1 || first.metadata().contains("split.count")) {
    uint64_t total = 0;
    for (size_t i = 0; i < files_.size(); ++i) {
      const GgufMetadata m(files_[i]->metadata(), files_[i]->path().string());
      const int64_t no = m.get_size("split.no", 65535), count = m.get_size("split.count", 65535);
      if (no != static_cast<int64_t>(i) || count != static_cast<int64_t>(files_.size()))
        throw BadInput(m.where("split.no") + " and 'split.count' say part " + std::to_string(no + 1) + " of " +
                       std::to_string(count) + ", but the file is part " + std::to_string(i + 1) + " of " +
                       std::to_string(files_.size()));
      total += files_[i]->tensors().size();
    }
    const GgufMetadata m(first.metadata(), origin);
    if (auto n = m.find_size("split.tensors.count", int64_t{1} << 40); n && static_cast<uint64_t>(*n) != total)
      throw BadInput(m.where("split.tensors.count") + " says " + std::to_string(*n) + " tensors, the parts hold " +
                     std::to_string(total));
  }
  std::set<std::string, std::less<>> seen;
  for (const auto& f : files_)
    for (const auto& t : f->tensors())
      if (!seen.insert(t.name).second)
        throw BadInput(f->path().string() + ": tensor '" + t.name + "' is also in another part of the split set");

  const GgufMetadata meta(first.metadata(), origin);
  const std::string arch_name = meta.get_string("general.architecture");
  const gguf::Family* family = gguf::find_family(arch_name);
  if (!family)
    throw BadInput(meta.where("general.architecture") + " is '" + arch_name +
                   "', an architecture llm2hef has no tensor-name table for (it reads: " + gguf_supported_archs() +
                   ")");

  refuse_undequantized_tensors(files_);

  GgufTensorAccess access{[this](std::string_view n) { return find_stored(n); },
                          [this](std::string_view n) { return read_stored(n); }};
  // The row's architecture, or a variant of it (Mistral, written as llama).
  const GgufArch* arch = &gguf::named_variant(*family, meta);
  GgufConfig cfg = gguf_config(meta, *arch, access);
  config_ = sdk::JsonFile(origin + " (config.json from its metadata)", std::move(cfg.config));
  notes_ = std::move(cfg.notes);
  metadata_name_ = name_from_metadata(meta);
  add_slots(*arch, config_.raw().value("num_hidden_layers", config_.raw().value("n_layer", int64_t{0})),
            "metadata key '" + arch->gguf + ".block_count'");

  // What was dequantized, for export and inspect.
  std::map<std::string, int> types;
  for (const auto& [name, s] : slots_) ++types[s.stored->type->name];
  std::string list;
  bool quantized = false;
  for (const auto& [t, n] : types) {
    list += (list.empty() ? "" : ", ") + std::to_string(n) + " " + t;
    if (t != "F32" && t != "F16" && t != "BF16") quantized = true;
  }
  notes_.insert(notes_.begin(), "GGUF weights: " + list + " tensors, read as float32");
  if (quantized)
    notes_.insert(notes_.begin() + 1,
                  "weights quantized in the GGUF are dequantized here and the DFC will quantize them again (a second "
                  "rounding, on top of the first); use an F16, BF16 or Q8_0 file of the model where you have one");
  std::error_code ec;
  setup_tokenizer(fs::is_directory(path, ec) ? path : fs::path(), first.metadata());
}

void GgufCheckpoint::setup_tokenizer(const fs::path& folder, const nlohmann::ordered_json& metadata) {
  // A folder's own files take precedence over the metadata (docs/gguf.md).
  if (!folder.empty() && checkpoint_has_file(folder, folder / "tokenizer.json")) {
    tokenizer_json_ = folder / "tokenizer.json";
    if (checkpoint_has_file(folder, folder / "tokenizer_config.json")) {
      tokenizer_config_ = sdk::JsonFile::load(folder / "tokenizer_config.json");
      tokenizer_config_origin_ =
          (folder / "tokenizer_config.json").string() + " (the folder's file, not the GGUF metadata)";
    }
    if (checkpoint_has_file(folder, folder / "generation_config.json"))
      generation_config_ = sdk::JsonFile::load(folder / "generation_config.json");
    notes_.push_back("tokenizer: " + tokenizer_json_.string() + " (the folder's file, not the GGUF metadata)");
    return;
  }
  const std::string origin = files_.front()->path().string();
  try {
    GgufTokenizerFiles tok = gguf_tokenizer_files(metadata, origin);
    std::string text;
    try {
      text = tok.tokenizer_json.dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
    } catch (const nlohmann::json::exception& e) {  // a token that is not UTF-8
      throw BadInput(origin + ": tokenizer.json cannot be written from the metadata: " + e.what());
    }
    // In $TMPDIR (an unusable one is named by ScratchDir), removed with the
    // checkpoint, on Ctrl-C or SIGTERM, or by the next run after a SIGKILL.
    if (!staging_) staging_.emplace(kGgufScratchPrefix);
    tokenizer_json_ = staging_->write("tokenizer.json", text);
    tokenizer_config_ =
        sdk::JsonFile(origin + " (tokenizer_config.json from its metadata)", std::move(tok.tokenizer_config));
    tokenizer_config_origin_ = "the GGUF metadata of " + origin + " (key tokenizer.chat_template)";
    tokenizer_config_from_metadata_ = true;
  } catch (const BadInput& e) {
    // inspect needs no tokenizer: the error is raised when one is asked for.
    tokenizer_error_ = e.what();
  }
}

const GgufTensorInfo* GgufCheckpoint::find_stored(std::string_view name, const GgufFile** file) const {
  for (const auto& f : files_)
    if (const GgufTensorInfo* t = f->find(name)) {
      if (file) *file = f.get();
      return t;
    }
  return nullptr;
}

std::vector<float> GgufCheckpoint::read_stored(std::string_view name) const {
  const GgufFile* file = nullptr;
  const GgufTensorInfo* t = find_stored(name, &file);
  if (!t) throw InternalError("read_stored: no tensor '" + std::string(name) + "'");
  Slot s;
  s.file = file;
  s.stored = t;
  std::vector<float> v(static_cast<size_t>(t->numel()));
  read_flat(s, 0, v.size(), v.data());
  return v;
}

void GgufCheckpoint::add_slots(const GgufArch& arch, int64_t blocks, const std::string& block_count_key) {
  for (const auto& f : files_)
    for (const auto& t : f->tensors()) {
      if (is_gguf_config_tensor(t.name)) continue;
      const std::string where = f->path().string() + ": tensor '" + t.name + "'";
      const std::optional<GgufNameMatch> m = map_gguf_tensor(arch, t.name);
      if (!m)
        throw Unsupported(where + " has no Hugging Face counterpart in llm2hef's table for architecture '" + arch.gguf +
                          "' (docs/gguf.md); converting without it would change the model");
      // The adapters read blocks 0 .. block_count-1 only: a block past the
      // count would be dropped without a word.
      if (m->block >= blocks)
        throw BadInput(where + " belongs to block " + std::to_string(m->block) + ", but " + block_count_key + " is " +
                       std::to_string(blocks) + " (blocks 0 to " + std::to_string(blocks - 1) +
                       "); the file's tensors and metadata disagree");
      Slot s;
      s.file = f.get();
      s.stored = &t;
      s.transform = m->transform;
      s.info.name = m->hf_name;
      s.info.dtype = sdk_dtype(*t.type);
      s.info.dtype_text = t.type->name;
      s.info.shape = t.torch_shape();
      s.info.file = f->path();
      for (Slot& one : transformed(std::move(s), *m, where)) {
        auto [it, fresh] = slots_.emplace(one.info.name, std::move(one));
        if (!fresh) throw BadInput(where + " maps to '" + it->first + "', which another tensor maps to as well");
      }
    }
}

std::vector<GgufCheckpoint::Slot> GgufCheckpoint::transformed(Slot s, const GgufNameMatch& m,
                                                              const std::string& where) const {
  const sdk::JsonFile& c = config_;
  const int64_t heads = c.raw().value("num_attention_heads", c.raw().value("n_head", int64_t{1}));
  const int64_t kv_heads = c.raw().value("num_key_value_heads", heads);
  const int64_t rows = s.info.shape[0];
  switch (m.transform) {
    case GgufTransform::none:
    case GgufTransform::minus_one: break;
    case GgufTransform::rope_unpermute: {
      // LlamaModel.permute(w, n_head): rows viewed as [n_head, 2, dim/2]
      // were stored as [n_head, dim/2, 2]; HF row h*dim + p*(dim/2) + i
      // is stored row h*dim + 2i + p.
      const int64_t n = m.is_q ? heads : kv_heads;
      if (n <= 0 || rows % (2 * n) != 0)
        throw BadInput(where + ": " + std::to_string(rows) + " rows cannot be split into " + std::to_string(n) +
                       " heads of an even size (attention.head_count" + (m.is_q ? "" : "_kv") + ")");
      const int64_t dim = rows / n, half = dim / 2;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = r / dim, p = (r % dim) / half, i = r % half;
        s.row_source.push_back(h * dim + 2 * i + p);
      }
      break;
    }
    case GgufTransform::neox_qkv: {
      // GPTNeoXModel.modify_tensors: per-head [q k v] rows regrouped as
      // [all q; all k; all v]; HF row h*3*dim + j*dim + i is stored row
      // j*heads*dim + h*dim + i.
      if (heads <= 0 || rows % (3 * heads) != 0)
        throw BadInput(where + ": " + std::to_string(rows) + " rows are not 3 x " + std::to_string(heads) + " heads");
      const int64_t dim = rows / 3 / heads;
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t h = r / (3 * dim), j = (r % (3 * dim)) / dim, i = r % dim;
        s.row_source.push_back(j * heads * dim + h * dim + i);
      }
      break;
    }
    case GgufTransform::transpose:
      if (s.info.shape.size() != 2) throw BadInput(where + ": expected a matrix");
      std::swap(s.info.shape[0], s.info.shape[1]);
      break;
    case GgufTransform::unsqueeze_1:
      if (s.info.shape.size() != 2) throw BadInput(where + ": expected [channels, kernel]");
      s.info.shape = {s.info.shape[0], 1, s.info.shape[1]};
      break;
    case GgufTransform::split_qkv: {
      // Rows [q; k; v] as llama.cpp's phi2 graph views them: heads x dim
      // query rows, then kv_heads x dim for keys and for values.
      const int64_t hidden = c.raw().value("hidden_size", int64_t{0});
      const int64_t dim = c.raw().value("head_dim", heads > 0 ? hidden / heads : int64_t{0});
      const int64_t q_rows = heads * dim, kv_rows = kv_heads * dim;
      if (dim <= 0 || rows != q_rows + 2 * kv_rows)
        throw BadInput(where + ": " + std::to_string(rows) + " rows are not q (" + std::to_string(heads) +
                       " heads) + k and v (" + std::to_string(kv_heads) + " heads) of " + std::to_string(dim));
      const int64_t per_row = s.info.shape.size() == 2 ? s.info.shape[1] : 1;
      std::vector<Slot> parts;
      int64_t first = 0;
      for (const auto& [part, n] : {std::pair{"q", q_rows}, std::pair{"k", kv_rows}, std::pair{"v", kv_rows}}) {
        Slot& one = parts.emplace_back(s);
        one.info.name.replace(one.info.name.find("{QKV}"), 5, part);
        one.info.shape[0] = n;
        one.flat_base = static_cast<uint64_t>(first * per_row);
        first += n;
      }
      return parts;
    }
    case GgufTransform::split_heads: {
      if (s.info.shape.size() != 2) throw BadInput(where + ": expected [heads, head_dim]");
      const int64_t n = s.info.shape[0], dim = s.info.shape[1];
      std::vector<Slot> parts;
      for (int64_t h = 0; h < n; ++h) {
        Slot& one = parts.emplace_back(s);
        one.info.name.replace(one.info.name.find("{H}"), 3, std::to_string(h));
        one.info.shape = {dim};
        one.flat_base = static_cast<uint64_t>(h * dim);
      }
      return parts;
    }
  }
  std::vector<Slot> one;
  one.push_back(std::move(s));
  return one;
}

const GgufCheckpoint::Slot& GgufCheckpoint::slot(std::string_view tensor) const {
  auto it = slots_.find(tensor);
  if (it == slots_.end())
    throw BadInput(path_.string() + ": tensor '" + std::string(tensor) + "' not found in the checkpoint");
  return it->second;
}

std::vector<std::string> GgufCheckpoint::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [n, s] : slots_) names.push_back(n);
  return names;
}

// Stored elements [first, last) (flat, ne[0] fastest) as float32. Blocks
// never straddle rows (ne[0] is a multiple of the block size), so element e
// is in block e / block_size at byte e / block_size * type_size. Partial
// blocks at either end are decoded whole into a scratch block.
void GgufCheckpoint::read_flat(const Slot& s, uint64_t first, uint64_t last, float* out) const {
  const GgmlType& type = *s.stored->type;
  const uint64_t bs = type.block_size;
  const uint8_t* data = s.file->raw(*s.stored).data();
  float scratch[256];
  // Decode in slices of ~2 Mi values and drop their pages once converted,
  // so a whole-tensor read maps only a slice at a time.
  constexpr uint64_t kSliceBlocks = (uint64_t{2} << 20);
  uint64_t e = first;
  uint64_t released = s.stored->begin;
  while (e < last) {
    const uint64_t block = e / bs, in_block = e % bs;
    if (in_block != 0 || last - e < bs) {
      dequantize_blocks(type, data + block * type.type_size, 1, scratch);
      const uint64_t n = std::min(bs - in_block, last - e);
      std::copy_n(scratch + in_block, n, out + (e - first));
      e += n;
    } else {
      const uint64_t n_blocks = std::min((last - e) / bs, std::max<uint64_t>(1, kSliceBlocks / bs));
      dequantize_blocks(type, data + block * type.type_size, static_cast<size_t>(n_blocks), out + (e - first));
      e += n_blocks * bs;
    }
    const uint64_t upto = s.stored->begin + e / bs * type.type_size;
    if (upto > released + (uint64_t{1} << 20)) {
      s.file->release(released, upto);
      released = upto;
    }
  }
  s.file->release(released, s.stored->begin + (last + bs - 1) / bs * type.type_size);
}

void GgufCheckpoint::read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end,
                               std::span<float> out) const {
  const Slot& s = slot(tensor);
  const int64_t rows = s.info.rows(), row_size = s.info.row_size();
  if (row_begin < 0 || row_begin > row_end || row_end > rows)
    throw InternalError(s.file->path().string() + ": tensor '" + s.info.name + "': rows [" + std::to_string(row_begin) +
                        ", " + std::to_string(row_end) + ") requested of " + std::to_string(rows));
  const uint64_t count = static_cast<uint64_t>(row_end - row_begin) * static_cast<uint64_t>(row_size);
  if (out.size() != count)
    throw InternalError(s.file->path().string() + ": tensor '" + s.info.name + "': output holds " +
                        std::to_string(out.size()) + " values, " + std::to_string(count) + " requested");
  const uint64_t rs = static_cast<uint64_t>(row_size);
  if (s.transform == GgufTransform::transpose) {
    // HF [in, out] is stored as [out, in]: HF row r is stored column r.
    // Each stored row contributes the slice [row_begin, row_end).
    const uint64_t stored_rows = static_cast<uint64_t>(s.info.shape[1]), stored_cols = static_cast<uint64_t>(rows);
    const uint64_t n = static_cast<uint64_t>(row_end - row_begin);
    std::vector<float> slice(n);
    for (uint64_t j = 0; j < stored_rows; ++j) {
      read_flat(s, j * stored_cols + static_cast<uint64_t>(row_begin), j * stored_cols + static_cast<uint64_t>(row_end),
                slice.data());
      for (uint64_t r = 0; r < n; ++r) out[r * stored_rows + j] = slice[r];
    }
  } else if (!s.row_source.empty()) {
    for (int64_t r = row_begin; r < row_end;) {
      // Runs of consecutive stored rows are read in one call.
      int64_t end = r + 1;
      while (end < row_end && s.row_source[end] == s.row_source[end - 1] + 1) ++end;
      const uint64_t src = static_cast<uint64_t>(s.row_source[r]);
      read_flat(s, s.flat_base + src * rs, s.flat_base + (src + static_cast<uint64_t>(end - r)) * rs,
                out.data() + static_cast<uint64_t>(r - row_begin) * rs);
      r = end;
    }
  } else {
    read_flat(s, s.flat_base + static_cast<uint64_t>(row_begin) * rs, s.flat_base + static_cast<uint64_t>(row_end) * rs,
              out.data());
  }
  if (s.transform == GgufTransform::minus_one)
    for (float& v : out) v -= 1.0f;  // Gemma's stored 1 + w (exact: Sterbenz for w in [-0.5, 1])

  size_t bad = out.size();
  for (size_t i = 0; i < out.size(); ++i)
    if (!std::isfinite(out[i])) {
      bad = i;
      break;
    }
  if (bad != out.size()) nonfinite_.record(s.info, row_begin, bad, out[bad]);
}

// The metadata's name, else the file's stem without a split suffix
// ("-00001-of-00003"); empty for a folder whose GGUF names no model.
std::string GgufCheckpoint::own_model_name() const {
  if (!metadata_name_.empty()) return metadata_name_;
  std::error_code ec;
  if (fs::is_directory(path_, ec) || !has_gguf_extension(path_)) return {};
  const std::string name = path_.filename().string();
  std::smatch m;
  if (std::regex_match(name, m, split_pattern())) return m[1].str();
  return path_.stem().string();
}

// tokenizer_config may be the folder's file or built from the metadata: the
// source says which (a template from the metadata was never in a
// tokenizer_config.json, so it is named by its key alone).
std::string GgufCheckpoint::tokenizer_config_source(const std::string& source) const {
  if (tokenizer_config_origin_.empty()) return source;
  if (tokenizer_config_from_metadata_) return tokenizer_config_origin_;
  return source + ", from " + tokenizer_config_origin_;
}

}  // namespace

bool is_gguf_checkpoint(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (is_present_file(path / "config.json")) return false;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (has_gguf_extension(e.path())) return true;
    return false;
  }
  return fs::exists(path, ec) && (has_gguf_extension(path) || starts_with_magic(path));
}

std::unique_ptr<CheckpointReader> open_gguf_checkpoint(const fs::path& path, NonFinitePolicy nonfinite) {
  return std::make_unique<GgufCheckpoint>(path, nonfinite);
}

}  // namespace llm2hef::core
