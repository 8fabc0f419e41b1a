#include "llm2hef/core/checkpoint_dir.hpp"

#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "llm2hef/core/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);  // follows symlinks: the HF cache links snapshots to blobs
}

sdk::JsonFile optional_json(const fs::path& p) { return is_file(p) ? sdk::JsonFile::load(p) : sdk::JsonFile(); }

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

class CheckpointDir final : public sdk::Checkpoint {
 public:
  explicit CheckpointDir(const fs::path& dir);

  const fs::path& dir() const override { return dir_; }
  const sdk::JsonFile& config() const override { return config_; }
  const sdk::JsonFile& generation_config() const override { return generation_config_; }
  const sdk::JsonFile& tokenizer_config() const override { return tokenizer_config_; }
  fs::path tokenizer_json() const override { return tokenizer_json_; }

  bool has(std::string_view tensor) const override { return tensors_.find(tensor) != tensors_.end(); }
  const sdk::TensorInfo& info(std::string_view tensor) const override { return slot(tensor).info; }
  std::vector<std::string> tensor_names() const override;
  void read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end,
                 std::span<float> out) const override;

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
};

CheckpointDir::CheckpointDir(const fs::path& dir) : dir_(dir) {
  const std::string d = dir.string();
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw BadInput(d + ": no such folder");
  if (!fs::is_directory(dir, ec)) throw BadInput(d + ": not a folder");
  if (!is_file(dir / "config.json")) throw BadInput(d + ": not a checkpoint folder: config.json is missing");
  config_ = sdk::JsonFile::load(dir / "config.json");
  generation_config_ = optional_json(dir / "generation_config.json");
  tokenizer_config_ = optional_json(dir / "tokenizer_config.json");
  if (is_file(dir / "tokenizer.json")) tokenizer_json_ = dir / "tokenizer.json";

  // transformers prefers the single file when both are present; so do we.
  if (is_file(dir / "model.safetensors")) {
    const SafetensorsFile& f = open_weights(dir / "model.safetensors");
    for (const auto& e : f.entries()) add(f, e);
  } else if (is_file(dir / "model.safetensors.index.json")) {
    load_index(dir / "model.safetensors.index.json");
  } else if (is_file(dir / "pytorch_model.bin") || is_file(dir / "pytorch_model.bin.index.json")) {
    throw BadInput(d + ": weights are in PyTorch format (pytorch_model.bin); only safetensors can be read — "
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
    if (!is_file(path))
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

void CheckpointDir::read_rows(std::string_view tensor, int64_t row_begin, int64_t row_end,
                              std::span<float> out) const {
  const Slot& s = slot(tensor);
  s.file->read_rows(*s.entry, row_begin, row_end, out);
}

}  // namespace

std::unique_ptr<sdk::Checkpoint> open_checkpoint(const fs::path& dir) { return std::make_unique<CheckpointDir>(dir); }

}  // namespace llm2hef::core
