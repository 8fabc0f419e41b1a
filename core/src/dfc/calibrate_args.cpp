#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/dfc/calibrate_args.hpp"
#include "llm2hef/core/io/mapped_file.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::core {

int64_t parse_byte_size(const std::string& text, const std::string& option) {
  const auto bad = [&](const std::string& why) {
    return UsageError(option + ": '" + text + "' " + why + " (expected bytes, e.g. 500000000, 512MiB or 1.5GB)");
  };
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw bad("is not a size");
  }
  std::string unit = text.substr(used);
  unit.erase(0, unit.find_first_not_of(' '));
  struct Unit {
    const char* name;
    double bytes;
  };
  static constexpr Unit kUnits[] = {{"", 1},     {"B", 1},        {"kB", 1e3},        {"KB", 1e3},          {"MB", 1e6},
                                    {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  double scale = 0;
  for (const Unit& u : kUnits)
    if (unit == u.name) scale = u.bytes;
  if (scale == 0) throw bad("has an unknown unit '" + unit + "'");
  const double bytes = value * scale;
  if (!std::isfinite(bytes) || bytes < 0) throw bad("is not a non-negative size");
  if (bytes > 4.6e18) throw bad("is too large");
  // A fraction of a byte is a typo, not a size ("0.4" used to become 0 bytes):
  // in bytes it must be whole; with a unit it is rounded to the nearest byte.
  if (scale == 1 && bytes != std::floor(bytes)) throw bad("is not a whole number of bytes");
  return static_cast<int64_t>(std::llround(bytes));
}

namespace {

// A token file checked in one pass as it is parsed, never built: its DOM was
// 10-25x the file (a 200 MB file cost 1.9 GB). Only a list of lists of
// integers is valid, so nothing nests deeper than two levels: a deeper list
// or any object is refused where it opens.
class TokenFileCheck {
 public:
  TokenFileCheck(const std::string& where, int64_t vocab) : where_(where), vocab_(vocab) {}
  std::size_t nonempty() const { return nonempty_; }

  bool null() { return value(false, "null", "null"); }
  bool boolean(bool v) { return value(false, v ? "true" : "false", "boolean"); }
  bool number_integer(int64_t v) { return value(v >= 0 && v < vocab_, std::to_string(v), "number"); }
  bool number_unsigned(uint64_t v) { return value(v < static_cast<uint64_t>(vocab_), std::to_string(v), "number"); }
  // As written, cut: a number may be megabytes of digits.
  bool number_float(double, const std::string& text) { return value(false, text.substr(0, 40), "number"); }
  bool string(std::string&) { return value(false, "a string", "string"); }
  bool binary(nlohmann::json::binary_t&) { return value(false, "binary data", "binary"); }
  bool start_object(std::size_t) { return value(false, "an object", "object"); }
  bool key(std::string&) { return true; }  // never reached: an object is refused where it opens
  bool end_object() { return true; }
  bool start_array(std::size_t) {
    if (depth_ == 2) return value(false, "a list", "array");
    if (depth_ == 1) position_ = 0;
    ++depth_;
    return true;
  }
  bool end_array() {
    if (--depth_ == 1) {
      if (position_ > 0) ++nonempty_;
      ++sequence_;
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw BadInput(where_ + ": not valid JSON: " + e.what());
  }

 private:
  // A value where the file has one: the list itself, a sequence, or a token
  // id, which alone may be valid (`ok`).
  bool value(bool ok, const std::string& shown, const std::string& type_name) {
    if (depth_ == 0) throw BadInput(where_ + ": expected a JSON list of token-id lists, found " + type_name);
    if (depth_ == 1)
      throw BadInput(where_ + ": entry " + std::to_string(sequence_) + " is " + type_name +
                     ", not a list of token ids");
    if (!ok)
      throw BadInput(where_ + ": sequence " + std::to_string(sequence_) + ", position " + std::to_string(position_) +
                     ": " + shown + " is not a token id in [0, " + std::to_string(vocab_) + ")");
    ++position_;
    return true;
  }

  const std::string& where_;
  const int64_t vocab_;
  int depth_ = 0;             // 1 inside the list, 2 inside a sequence
  std::size_t sequence_ = 0;  // the sequence being read
  std::size_t position_ = 0;  // the next token's position in it
  std::size_t nonempty_ = 0;
};

}  // namespace

std::size_t check_token_sequences(const std::filesystem::path& path, int64_t vocab) {
  const std::string where = path.string();
  const MappedFile file(path);  // mapped, not read: the size is checked first
  const sdk::JsonLimits limits = sdk::JsonLimits::with_max_bytes(kMaxTokenFileBytes, "token-id file");
  if (file.size() > limits.max_bytes) throw BadInput(where + ": " + limits.too_big(file.size()));
  if (file.size() == 0) throw BadInput(where + ": not valid JSON: the file is empty");
  const auto* begin = reinterpret_cast<const char*>(file.data());
  const auto* end = begin + file.size();
  // nlohmann's lexer would end the text at a NUL byte (as the JSON reader
  // everywhere else refuses it).
  if (const void* nul = std::memchr(begin, 0, file.size()))
    throw BadInput(where + ": not valid JSON: a NUL byte at offset " +
                   std::to_string(static_cast<const char*>(nul) - begin));
  TokenFileCheck check(where, vocab);
  try {
    nlohmann::json::sax_parse(begin, end, &check);
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(where + ": not valid JSON: " + e.what());
  }
  if (check.nonempty() == 0) throw BadInput(where + ": no token ids (every sequence is empty)");
  return check.nonempty();
}

}  // namespace llm2hef::core
