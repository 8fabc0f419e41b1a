#include <cmath>
#include <cstdlib>
#include <string>

#include "llm2hef/core/dfc/calibrate_script.hpp"
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

std::size_t check_token_sequences(const std::filesystem::path& path, int64_t vocab) {
  const nlohmann::json doc = sdk::read_json(path, sdk::JsonLimits{});
  const std::string where = path.string();
  if (!doc.is_array()) throw BadInput(where + ": expected a JSON list of token-id lists, found " + doc.type_name());
  std::size_t nonempty = 0;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& seq = doc[i];
    if (!seq.is_array())
      throw BadInput(where + ": entry " + std::to_string(i) + " is " + seq.type_name() + ", not a list of token ids");
    for (std::size_t k = 0; k < seq.size(); ++k) {
      const nlohmann::json& t = seq[k];
      const bool ok = t.is_number_integer() && t.get<int64_t>() >= 0 && t.get<int64_t>() < vocab;
      if (!ok)
        throw BadInput(where + ": sequence " + std::to_string(i) + ", position " + std::to_string(k) + ": " + t.dump() +
                       " is not a token id in [0, " + std::to_string(vocab) + ")");
    }
    if (!seq.empty()) ++nonempty;
  }
  if (nonempty == 0) throw BadInput(where + ": no token ids (every sequence is empty)");
  return nonempty;
}

}  // namespace llm2hef::core
