// One checked reader for the floats a reading takes from config.json and
// turns into graph constants (norm epsilons, scales, soft-caps, the RoPE
// base). Each is finite, inside the range its formula needs, and survives
// the float32 rounding of the graph (1e-320 rounds to 0 and 1e308 to inf,
// which then divide or multiply every activation into NaN); otherwise
// BadInput (exit 3) naming the file, the key, the range and the value,
// before anything is written.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

// The values a formula can use. min_exclusive makes the range (min, max].
struct NumberRange {
  double min;
  double max;
  bool min_exclusive;
  const char* meaning;  // what the value is, for the message ("a norm epsilon")
};

// A norm's epsilon is added to a variance: a negative one can take the
// square root of a negative number; one above 1 swamps the variance itself.
inline constexpr NumberRange kNormEpsilon{0.0, 1.0, false, "a norm epsilon"};
// A multiplier, divisor or soft-cap applied to activations or scores (the
// real ones are 1/128 to 50): beyond 1e6 either way float32 activations
// overflow or collapse to 0.
inline constexpr NumberRange kScaleFactor{1e-6, 1e6, false, "a scale factor"};
// A RoPE scaling factor (longrope's `factor`): transformers' validation of
// the rope parameters asks for a float >= 1.
inline constexpr NumberRange kRopeScalingFactor{1.0, 1e6, false, "a RoPE scaling factor"};
// The RoPE base: theta_j = base^(-2j/d) needs a positive base.
inline constexpr NumberRange kRopeBase{0.0, 3.4028234663852886e38, true, "the RoPE base"};

// `value` checked against `range`; `where` is the prefix every message about
// the field uses (JsonFile::where, or "<file>: field 'rope_parameters' 'rope_theta'").
double checked_number(const nlohmann::json& value, const std::string& where, const NumberRange& range);

// config[key] checked; nullopt when absent or null.
std::optional<double> find_checked_number(const JsonFile& config, const std::string& key, const NumberRange& range);

// config[key] checked, or `fallback` (the config class's default) when absent or null.
double checked_number_or(const JsonFile& config, const std::string& key, double fallback, const NumberRange& range);

}  // namespace llm2hef::sdk
