// config.json for a GGUF checkpoint, from its `<arch>.*` metadata.
//
// What each key means is llama.cpp's (gguf-py constants.py Keys, written by
// conversion/<family>.py set_gguf_parameters); the HF keys are those each
// family's transformers config reads. Hyper-parameters GGUF does not carry
// are taken as llama.cpp itself assumes them, and listed in `notes` so that
// export and inspect can say so (docs/gguf.md, "config.json").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/checkpoint/gguf_file.hpp"
#include "llm2hef/core/checkpoint/gguf_names.hpp"

namespace llm2hef::core {

// Typed reads of GGUF metadata that name the file and key when a value is
// absent or of the wrong type.
class GgufMetadata {
 public:
  GgufMetadata(const nlohmann::ordered_json& metadata, std::string origin) : m_(metadata), origin_(std::move(origin)) {}

  const nlohmann::ordered_json& raw() const { return m_; }
  const std::string& origin() const { return origin_; }
  bool has(const std::string& key) const { return m_.contains(key); }
  // "<origin>: metadata key '<key>'"
  std::string where(const std::string& key) const;

  // A non-negative integer up to `max`; BadInput when absent (get_*), of
  // another type, or out of range.
  int64_t get_size(const std::string& key, int64_t max = int64_t{1} << 24) const;
  std::optional<int64_t> find_size(const std::string& key, int64_t max = int64_t{1} << 24) const;
  std::optional<double> find_number(const std::string& key) const;
  std::optional<bool> find_bool(const std::string& key) const;
  std::optional<std::string> find_string(const std::string& key) const;
  std::string get_string(const std::string& key) const;

 private:
  const nlohmann::ordered_json& m_;
  std::string origin_;
};

struct GgufConfig {
  nlohmann::json config;           // config.json
  std::vector<std::string> notes;  // hyper-parameters assumed (not in the file), one line each
};

// What the builder needs of the tensors: a tensor's info by GGUF name
// (nullptr when absent) and a small float tensor read whole.
struct GgufTensorAccess {
  std::function<const GgufTensorInfo*(std::string_view)> find;
  std::function<std::vector<float>(std::string_view)> read;
};

// Throws BadInput naming the file and key for a missing or mistyped key,
// Unsupported for a hyper-parameter that cannot be written as a HF config
// exactly (e.g. llama rope_freqs that are not Llama 3's rule).
GgufConfig gguf_config(const GgufMetadata& meta, const GgufArch& arch, const GgufTensorAccess& tensors);

}  // namespace llm2hef::core
