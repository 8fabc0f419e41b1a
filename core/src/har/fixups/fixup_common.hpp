// Small helpers shared by the fixup passes (private to core/src/har).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/har/fixups.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::har {

inline std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

inline std::string join_ints(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// Last dimension of the first shape in `shapes`; BadInput when there is none.
inline int64_t last_width(const HnModel& hn, const std::string& layer, const std::vector<Shape>& shapes,
                          const char* field) {
  if (shapes.empty() || shapes[0].empty())
    throw BadInput(hn.label() + ": layer '" + layer + "' has no " + field);
  return shapes[0].back();
}

// `<scope>/<short>` for the single scope that has it.
inline std::string find_input_layer(const HnModel& hn, const std::string& short_name_) {
  std::vector<std::string> hits;
  for (const auto& s : hn.scopes())
    if (hn.has(s + "/" + short_name_)) hits.push_back(s + "/" + short_name_);
  if (hits.size() != 1)
    throw BadInput(hn.label() + ": the manifest's input layer '" + short_name_ + "' is in " +
                   std::to_string(hits.size()) + " scopes of the HN, expected exactly one");
  if (hn.type(hits[0]) != "input_layer")
    throw BadInput(hn.label() + ": '" + hits[0] + "' is a " + hn.type(hits[0]) + ", not an input_layer");
  return hits[0];
}

}  // namespace llm2hef::core::har
