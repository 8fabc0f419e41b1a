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
// Face, Hailo or llm2hef file (configs nest < 10 deep; the largest
// tokenizer.json files are tens of MB) and far below what exhausts the stack
// or memory.
struct JsonLimits {
  std::size_t max_depth = 64;
  std::size_t max_bytes = std::size_t{1} << 30;  // 1 GiB
  bool refuse_duplicate_keys = false;            // nlohmann would keep the last silently
};

// Parses `text` in one linear pass with `limits` enforced during the parse;
// throws BadInput "<origin>: ..." on a syntax error or a broken limit.
nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits = {});

// Parses the JSON document in `path`, whatever its top-level type, through
// parse_json; throws BadInput naming the file on I/O or syntax errors.
nlohmann::json read_json(const std::filesystem::path& path, const JsonLimits& limits = {});

class JsonFile {
 public:
  JsonFile() = default;
  JsonFile(std::string origin, nlohmann::json doc) : origin_(std::move(origin)), doc_(std::move(doc)) {}

  // Parses `path`; throws BadInput naming the file on I/O or syntax errors,
  // or when the top level is not an object.
  static JsonFile load(const std::filesystem::path& path);

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
