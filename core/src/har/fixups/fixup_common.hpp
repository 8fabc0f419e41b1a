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
  if (shapes.empty() || shapes[0].empty()) throw BadInput(hn.label() + ": layer '" + layer + "' has no " + field);
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

// A pe input layer and the conv the parser put behind it to tile the table
// once per head (hailo-contract.md sections 2 and 5.1).
struct TilingConv {
  std::string input, conv;
  int64_t width = 0, widened = 0;
};

// The tiling conv behind `input`, found by structure: the input layer's only
// consumer is a single-input conv multiplying its width by a whole number
// >= 2 (kernel_shape [1, 1, w, k*w] when the HN gives one).
inline std::optional<TilingConv> tiling_conv_behind(const HnModel& hn, const std::string& input) {
  if (hn.type(input) != "input_layer" || hn.is_cache(input)) return std::nullopt;
  const auto outs = hn.outputs(input);
  if (outs.size() != 1 || hn.type(outs[0]) != "conv" || hn.inputs(outs[0]).size() != 1) return std::nullopt;
  const int64_t w = last_width(hn, input, hn.output_shapes(input), "output_shapes");
  const int64_t cw = last_width(hn, outs[0], hn.output_shapes(outs[0]), "output_shapes");
  if (w <= 0 || cw <= w || cw % w != 0) return std::nullopt;
  const auto& params = hn.layer(outs[0]).value("params", nlohmann::ordered_json::object());
  if (params.contains("kernel_shape")) {
    const auto ks = params.at("kernel_shape");
    if (!ks.is_array() || ks.size() != 4 || ks[2] != w || ks[3] != cw) return std::nullopt;
  }
  return TilingConv{input, outs[0], w, cw};
}

}  // namespace llm2hef::core::har
