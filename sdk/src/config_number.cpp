#include "llm2hef/sdk/config_number.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

std::string range_text(const NumberRange& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s%g and <= %g", r.min_exclusive ? "> " : ">= ", r.min, r.max);
  return buf;
}

// A nonzero value whose float32 rounding is 0 or inf (or a denormal, which
// the Hailo toolchain flushes to 0) is not the value the config states.
bool survives_float32(double v) {
  if (v == 0) return true;
  const float f = static_cast<float>(v);
  return std::isfinite(f) && std::fabs(f) >= std::numeric_limits<float>::min();
}

}  // namespace

double checked_number(const nlohmann::json& value, const std::string& where, const NumberRange& range) {
  auto refuse = [&](const std::string& why) {
    throw BadInput(where + ": " + value.dump() + " " + why + " (" + range.meaning + " must be " + range_text(range) +
                   ")");
  };
  if (!value.is_number()) refuse("is not a number");
  const double v = value.get<double>();
  if (!std::isfinite(v)) refuse("is not finite");
  const bool above_min = range.min_exclusive ? v > range.min : v >= range.min;
  if (!above_min || v > range.max) refuse("is out of range");
  if (!survives_float32(v)) refuse("rounds to 0 or infinity in float32");
  return v;
}

std::optional<double> find_checked_number(const JsonFile& config, const std::string& key, const NumberRange& range) {
  if (!config.has(key) || config.raw()[key].is_null()) return std::nullopt;
  return checked_number(config.raw()[key], config.where(key), range);
}

double checked_number_or(const JsonFile& config, const std::string& key, double fallback, const NumberRange& range) {
  return find_checked_number(config, key, range).value_or(fallback);
}

}  // namespace llm2hef::sdk
