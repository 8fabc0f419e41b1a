// Model-script lines that depend on the HN, for compile.py
// (`llm2hef har lines`):
//  - before optimize: `quantization_param([...], precision_mode=a8_w4)` for
//    every compressible conv (hailo-contract.md section 7);
//  - before compile: the two network_group lines and a format_conversion
//    line for every cache layer of both groups (section 8).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/har/hn_model.hpp"

namespace llm2hef::core::har {

struct ScriptLines {
  std::vector<std::string> lines;  // ready to append to the model script
  std::vector<std::string> notes;  // what was left out and why
};

// A conv is compressible unless its kernel is > 90% zeros (the constant 0/1
// tiling, rotate-half and GQA matrices) or its narrowest input is at most
// `pe_width` wide. Reads the weights member as a stream.
// With a precision plan (quantization.json, docs/quantization-gate.md): the
// compressible convs get the plan's default mode instead of a8_w4, every
// plan entry becomes part of a `quantization_param([layers],
// precision_mode=M)` line (one per mode) for the layers whose
// original_names list its ONNX node, and a layer the plan sets is left out
// of the default line; the layers of entries with weight_group_size follow
// in one `quantization_param([layers], weight_group_size=128)` line.
struct PrecisionPlan;
ScriptLines optimize_lines(const std::filesystem::path& har, int64_t pe_width, const PrecisionPlan* plan = nullptr);

ScriptLines compile_lines(const HnModel& hn);

}  // namespace llm2hef::core::har
