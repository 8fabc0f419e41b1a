#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "llm2hef/core/checkpoint/checkpoint_files.hpp"
#include "llm2hef/core/checkpoint/gguf_checkpoint.hpp"
#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/core/io/near_miss.hpp"
#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

sdk::JsonFile optional_json(const fs::path& dir, const char* name) {
  return checkpoint_has_file(dir, dir / name) ? sdk::JsonFile::load(dir / name) : sdk::JsonFile();
}

// A shard name from the index must stay inside the folder. Checked on the
// text, not by resolving links, because Hugging Face cache snapshots are
// folders of symlinks pointing outside themselves.
bool is_safe_relative(const std::string& name) {
  if (name.empty()) return false;
  const fs::path p(name);
  if (p.has_root_path()) return false;
  for (const auto& part : p)
    if (part == "..") return false;
  return true;
}

std::string describe(float v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

class CheckpointDir final : public CheckpointReader {
 public:
  CheckpointDir(const fs::path& dir, NonFinitePolicy nonfinite);
  std::vector<NonFiniteWeight> nonfinite_weights() const override;

  const fs::path& dir() const override { return dir_; }
  const sdk::JsonFile& config() const override { return config_; }
  const sdk::JsonFile& generation_config() const override { return generation_config_; }
  const sdk::JsonFile& tokenizer_config() const override { return tokenizer_config_; }
  fs::path tokenizer_json() const override { return tokenizer_json_; }

  bool has(std::string_view tensor) const override { return tensors_.find(tensor) != tensors_.end(); }
  const sdk::TensorInfo& info(std::string_view tensor) const override { return slot(tensor).info; }
  std::vector<std::string> tensor_names() const override;
  void read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end, std::span<float> out) const override;
  std::span<const char> stored_f32_rows(std::string_view tensor, int64_t row_begin, int64_t row_end) const override;
  void release_stored(std::span<const char> rows) const override;

 private:
  struct Slot {
    sdk::TensorInfo info;
    const SafetensorsFile* file = nullptr;
    const SafetensorsEntry* entry = nullptr;
  };

  const Slot& slot(std::string_view tensor) const;
  const SafetensorsFile& open_weights(const fs::path& path);
  void add(const SafetensorsFile& file, const SafetensorsEntry& entry);
  void load_index(const fs::path& index_path);

  fs::path dir_;
  sdk::JsonFile config_, generation_config_, tokenizer_config_;
  fs::path tokenizer_json_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, Slot, std::less<>> tensors_;
  // First non-finite value per tensor, as met by reads (a tensor read twice
  // keeps the earliest position seen).
  NonFiniteLog nonfinite_;
};

namespace {

// "org/name" with nothing else: how a Hugging Face Hub id is written.
bool looks_like_hub_id(const std::string& s) {
  const size_t slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.find('/', slash + 1) != std::string::npos)
    return false;
  if (s[0] == '.' || s[0] == '~') return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/')) return false;
  return true;
}

}  // namespace

CheckpointDir::CheckpointDir(const fs::path& dir, NonFinitePolicy nonfinite) : dir_(dir), nonfinite_(nonfinite) {
  const std::string d = dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec) && looks_like_hub_id(d))
    throw BadInput(d + ": no such folder" + did_you_mean_suffix(dir) + ". If '" + d +
                   "' is a Hugging Face Hub id, `llm2hef inspect " + d + "` and `llm2hef export " + d +
                   "` download it (docs/hub.md); or download it with huggingface_hub's CLI\n  hf download " + d +
                   " --local-dir " + d.substr(d.find('/') + 1) + "\nand pass that folder");
  if (!fs::exists(dir, ec)) throw BadInput(d + ": no such folder" + did_you_mean_suffix(dir));
  if (!fs::is_directory(dir, ec))
    throw BadInput(d + ": not a folder, nor a GGUF file (a Hugging Face checkpoint folder or a .gguf file is read)");
  // Every file is looked up through checkpoint_has_file: none may lead out
  // of the checkpoint (checkpoint_files.hpp).
  if (!checkpoint_has_file(dir, dir / "config.json"))
    throw BadInput(d + ": not a checkpoint folder: config.json is missing");
  config_ = sdk::JsonFile::load(dir / "config.json");
  generation_config_ = optional_json(dir, "generation_config.json");
  tokenizer_config_ = optional_json(dir, "tokenizer_config.json");
  if (checkpoint_has_file(dir, dir / "tokenizer.json")) tokenizer_json_ = dir / "tokenizer.json";

  // transformers prefers the single file when both are present; so do we.
  if (checkpoint_has_file(dir, dir / "model.safetensors")) {
    const SafetensorsFile& f = open_weights(dir / "model.safetensors");
    for (const auto& e : f.entries()) add(f, e);
  } else if (checkpoint_has_file(dir, dir / "model.safetensors.index.json")) {
    load_index(dir / "model.safetensors.index.json");
  } else if (is_present_file(dir / "pytorch_model.bin") || is_present_file(dir / "pytorch_model.bin.index.json")) {
    throw BadInput(d +
                   ": weights are in PyTorch format (pytorch_model.bin); only safetensors can be read — "
                   "re-save the model with save_pretrained(..., safe_serialization=True)");
  } else {
    throw BadInput(d + ": no weights: neither model.safetensors nor model.safetensors.index.json is present");
  }
}

const SafetensorsFile& CheckpointDir::open_weights(const fs::path& path) {
  files_.push_back(std::make_unique<SafetensorsFile>(path));
  return *files_.back();
}

void CheckpointDir::add(const SafetensorsFile& file, const SafetensorsEntry& e) {
  Slot s;
  s.info.name = e.name;
  s.info.dtype = e.dtype;
  s.info.dtype_text = e.dtype_text;
  s.info.shape = e.shape;
  s.info.file = file.path();
  s.file = &file;
  s.entry = &e;
  auto [it, fresh] = tensors_.emplace(e.name, std::move(s));
  if (!fresh)
    throw BadInput(dir_.string() + ": tensor '" + e.name + "' is present in both " + it->second.file->path().string() +
                   " and " + file.path().string());
}

void CheckpointDir::load_index(const fs::path& index_path) {
  const sdk::JsonFile index = sdk::JsonFile::load(index_path, sdk::JsonLimits::weight_index());
  if (!index.has("weight_map")) throw BadInput(index.where("weight_map") + ": required but missing");
  const auto& wm = index.raw().at("weight_map");
  if (!wm.is_object()) throw BadInput(index.where("weight_map") + ": expected an object of tensor -> shard file");
  if (wm.empty()) throw BadInput(index.where("weight_map") + ": names no tensors");

  // Shard name -> tensors mapped to it, in a stable order for messages.
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [tensor, shard] : wm.items()) {
    if (!shard.is_string())
      throw BadInput(index.where("weight_map") + ": tensor '" + tensor + "': expected a shard file name, got " +
                     shard.dump());
    const std::string name = shard.get<std::string>();
    if (!is_safe_relative(name))
      throw BadInput(index.where("weight_map") + ": tensor '" + tensor + "': shard '" + name +
                     "' is not a plain file name inside the checkpoint folder");
    shards[name].push_back(tensor);
  }
  for (const auto& [name, tensors] : shards) {
    const fs::path path = dir_ / name;
    if (!checkpoint_has_file(dir_, path))
      throw BadInput(index_path.string() + ": shard " + path.string() + " (holding tensor '" + tensors.front() +
                     "') does not exist");
  }
  // Every tensor of every shard is taken (a tensor in two shards is refused
  // by add()); then each mapping must point at the shard that really has it.
  for (const auto& [name, tensors] : shards) {
    const SafetensorsFile& f = open_weights(dir_ / name);
    for (const auto& e : f.entries()) add(f, e);
  }
  for (const auto& [name, tensors] : shards) {
    const fs::path path = dir_ / name;
    for (const auto& t : tensors) {
      auto it = tensors_.find(t);
      if (it == tensors_.end() || it->second.file->path() != path)
        throw BadInput(index_path.string() + ": tensor '" + t + "' is mapped to " + path.string() +
                       ", which does not contain it");
    }
  }
}

const CheckpointDir::Slot& CheckpointDir::slot(std::string_view tensor) const {
  auto it = tensors_.find(tensor);
  if (it == tensors_.end())
    throw BadInput(dir_.string() + ": tensor '" + std::string(tensor) + "' not found in the checkpoint");
  return it->second;
}

std::vector<std::string> CheckpointDir::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, s] : tensors_) names.push_back(name);
  return names;
}

void CheckpointDir::read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end, std::span<float> out) const {
  const Slot& s = slot(tensor);
  const size_t bad = s.file->read_rows(*s.entry, row_begin, row_end, out);
  if (bad != out.size()) nonfinite_.record(s.info, row_begin, bad, out[bad]);
}

std::span<const char> CheckpointDir::stored_f32_rows(std::string_view tensor, int64_t row_begin,
                                                     int64_t row_end) const {
  const Slot& s = slot(tensor);
  size_t bad = 0;
  const std::span<const char> rows = s.file->f32_rows(*s.entry, row_begin, row_end, bad);
  if (rows.empty()) return rows;
  if (bad != rows.size() / 4) {
    float value;
    std::memcpy(&value, rows.data() + 4 * bad, 4);
    nonfinite_.record(s.info, row_begin, bad, value);
  }
  return rows;
}

void CheckpointDir::release_stored(std::span<const char> rows) const {
  for (const auto& f : files_)
    if (f->maps(rows)) return f->release_lent(rows);
}

std::vector<NonFiniteWeight> CheckpointDir::nonfinite_weights() const { return nonfinite_.all(); }

}  // namespace

void NonFiniteLog::record(const sdk::TensorInfo& info, int64_t row_begin, size_t bad, float value) const {
  const int64_t row_size = info.row_size();
  const int64_t at = static_cast<int64_t>(bad);
  NonFiniteWeight w{info.name, info.file.string(), {row_begin + at / row_size}, value};
  if (info.shape.size() > 1) w.index.push_back(at % row_size);
  if (policy_ == NonFinitePolicy::refuse) {
    std::string where;
    for (int64_t i : w.index) where += (where.empty() ? "[" : ", ") + std::to_string(i);
    throw BadInput(w.file + ": tensor '" + w.tensor + "' holds " + describe(w.value) + " at " + where +
                   "] (refused by --refuse-nonfinite)");
  }
  std::lock_guard lock(mutex_);
  auto [it, inserted] = first_.try_emplace(w.tensor, w);
  if (!inserted && w.index < it->second.index) it->second = w;
}

std::vector<NonFiniteWeight> NonFiniteLog::all() const {
  std::vector<NonFiniteWeight> out;
  std::lock_guard lock(mutex_);
  for (const auto& [name, w] : first_) out.push_back(w);
  return out;
}

std::string checkpoint_model_name(const CheckpointReader& ckpt, const fs::path& dir) {
  if (std::string own = ckpt.own_model_name(); !own.empty()) return own;
  const fs::path real = fs::weakly_canonical(dir);
  // The Hugging Face cache: <cache>/models--ORG--NAME/snapshots/<commit>.
  if (const auto repo = hf_cache_repository(real)) {
    const std::string repo_name = repo->filename().string();
    const size_t last = repo_name.rfind("--");
    if (last != std::string::npos && last + 2 < repo_name.size()) return repo_name.substr(last + 2);
  }
  return real.filename().string();
}

int64_t checkpoint_parameters(const sdk::Checkpoint& ckpt) {
  int64_t params = 0;
  for (const auto& t : ckpt.tensor_names())
    if (__builtin_add_overflow(params, ckpt.info(t).numel(), &params))
      throw BadInput(ckpt.dir().string() + ": the tensors' element counts add up past 2^63");
  return params;
}

std::unique_ptr<CheckpointReader> open_checkpoint(const fs::path& dir, NonFinitePolicy nonfinite) {
  // A .gguf file, a split set, or a folder holding one without config.json.
  if (is_gguf_checkpoint(dir)) return open_gguf_checkpoint(dir, nonfinite);
  return std::make_unique<CheckpointDir>(dir, nonfinite);
}

}  // namespace llm2hef::core
