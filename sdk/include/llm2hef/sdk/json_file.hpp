// A JSON document that remembers which file it came from, so that every
// complaint about a field can name the file and the field.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::sdk {

// What one JSON document may be. The defaults are far above any Hugging
// Face, Hailo or llm2hef file (configs nest < 10 deep) and far below what
// exhausts the stack. Each kind of file has its own size limit (below),
// set at about 4x the largest real file of that kind we know of, so that a
// file over it is refused before its DOM (5-10x the file) exhausts memory.
struct JsonLimits {
  std::size_t max_depth = 64;
  std::size_t max_bytes = std::size_t{1} << 30;  // 1 GiB
  bool refuse_duplicate_keys = false;            // nlohmann would keep the last silently
  const char* kind = "JSON file";                // named when max_bytes is exceeded

  // config.json, generation_config.json, tokenizer_config.json, an export's
  // manifest.json, hailo-config.json (file or HEF resource), a HAR's
  // metadata.json, adapter manifests: real ones are 1 KB to ~1.2 MB
  // (Gemma 3's tokenizer_config.json, thousands of added tokens).
  static constexpr std::size_t kSmallFileBytes = std::size_t{16} << 20;
  // tokenizer.json (checkpoint, export resource, HEF resource): GPT-2's is
  // 1.4 MB, Llama 3's 9 MB, Gemma 3's (the largest of the popular small
  // LLMs) about 33 MB.
  static constexpr std::size_t kTokenizerBytes = std::size_t{128} << 20;
  // model.safetensors.index.json: one weight_map entry per tensor, ~100
  // bytes each; 64 MiB is over 500,000 tensors.
  static constexpr std::size_t kWeightIndexBytes = std::size_t{64} << 20;
  // A HAR's .hn: a parsed 64,000-layer chain is 11-26 MB; no DFC-written HN
  // was available, an LLM's holds a few thousand layers.
  static constexpr std::size_t kHnBytes = std::size_t{128} << 20;

  static JsonLimits with_max_bytes(std::size_t bytes, const char* kind) {
    JsonLimits l;
    l.max_bytes = bytes;
    l.kind = kind;
    return l;
  }
  static JsonLimits small_file() { return with_max_bytes(kSmallFileBytes, "config or manifest JSON file"); }
  static JsonLimits tokenizer() { return with_max_bytes(kTokenizerBytes, "tokenizer.json"); }
  static JsonLimits weight_index() { return with_max_bytes(kWeightIndexBytes, "safetensors index"); }
  static JsonLimits hn() { return with_max_bytes(kHnBytes, "HN"); }
  // "N bytes of JSON exceed the limit of M bytes (X MiB) for a <kind>"
  std::string too_big(uint64_t bytes) const;
};

// Parses `text` in one linear pass with `limits` enforced during the parse;
// throws BadInput "<origin>: ..." on a syntax error or a broken limit.
nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits = {});
// Member paths, one key per level ("*" matches any key): {{"model", "merges"}}.
using JsonPaths = std::vector<std::vector<std::string>>;
// The same, for a reader that needs only part of a large file: members on a
// `dropped` path are fully checked but kept as null, never built (a
// tokenizer.json's merges are half the file and several times that as a DOM).
nlohmann::json parse_json_without(std::string_view text, const std::string& origin, const JsonPaths& dropped,
                                  const JsonLimits& limits = {});
// The same, keeping objects in document order (for files llm2hef rewrites,
// such as the HN). Duplicate keys are always refused: which of two
// same-named members a reader of the rewritten file would take is unclear.
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& origin,
                                          const JsonLimits& limits = {});

// Parses the JSON document in `path`, whatever its top-level type, through
// parse_json; throws BadInput naming the file on I/O or syntax errors.
nlohmann::json read_json(const std::filesystem::path& path, const JsonLimits& limits = {});
// read_json through parse_json_without.
nlohmann::json read_json_without(const std::filesystem::path& path, const JsonPaths& dropped,
                                 const JsonLimits& limits = {});

class JsonFile {
 public:
  JsonFile() = default;
  JsonFile(std::string origin, nlohmann::json doc) : origin_(std::move(origin)), doc_(std::move(doc)) {}

  // Parses `path`; throws BadInput naming the file on I/O or syntax errors,
  // or when the top level is not an object. Small files (configs,
  // manifests) by default; a tokenizer.json or index passes its own limits.
  static JsonFile load(const std::filesystem::path& path, const JsonLimits& limits = JsonLimits::small_file());

  const std::string& origin() const { return origin_; }
  const nlohmann::json& raw() const { return doc_; }
  bool empty() const { return doc_.is_null() || doc_.empty(); }
  bool has(const std::string& key) const;

  // Required fields: throw BadInput "<file>: field '<key>': ..." when absent
  // or of the wrong type.
  int64_t get_int(const std::string& key) const;
  double get_number(const std::string& key) const;
  std::string get_string(const std::string& key) const;

  // Optional fields: nullopt when absent or null; BadInput when present with
  // the wrong type.
  std::optional<int64_t> find_int(const std::string& key) const;
  std::optional<double> find_number(const std::string& key) const;
  std::optional<std::string> find_string(const std::string& key) const;
  std::optional<bool> find_bool(const std::string& key) const;
  // An int or a list of ints (eos_token_id is either).
  std::optional<std::vector<int64_t>> find_int_list(const std::string& key) const;

  // A model size (hidden, layers, heads, vocab...): an integer in 1..max,
  // else BadInput naming the field. Checked before any product is taken, so
  // no size computed from a config can overflow. `fallback` when absent
  // (find_size only).
  int64_t get_size(const std::string& key, int64_t max = kMaxModelSize) const;
  int64_t find_size(const std::string& key, int64_t fallback, int64_t max = kMaxModelSize) const;
  static constexpr int64_t kMaxModelSize = int64_t{1} << 24;

  // First of several spellings that is present (n_embd / hidden_size).
  int64_t get_int_any(std::initializer_list<const char*> keys) const;
  std::optional<int64_t> find_int_any(std::initializer_list<const char*> keys) const;

  // "<file>: field '<key>'" — the prefix every message about a field uses.
  std::string where(const std::string& key) const;

 private:
  std::string origin_;
  nlohmann::json doc_;
};

}  // namespace llm2hef::sdk
