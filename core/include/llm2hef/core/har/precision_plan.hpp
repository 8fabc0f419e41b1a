// The precision plan of `llm2hef calibrate` (OUT/quantization.json, key
// `plan`) and its mapping onto the HN: the plan names nodes of the exported
// model.onnx, the DFC's model script names HN layers, and each HN layer
// lists the ONNX nodes it was made of in `original_names`
// (hailo-contract.md section 4; docs/quantization-gate.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/har/hn_model.hpp"

namespace llm2hef::core::har {

// The precision modes public Hailo sources write in `quantization_param`
// lines (docs/quantization-gate.md lists where each was seen). A plan
// naming any other is refused rather than handed to an optimize that runs
// for hours before the DFC rejects it.
const std::vector<std::string>& known_precision_modes();

struct PlanEntry {
  size_t index = 0;            // position in plan.lines, for messages
  std::string onnx_node;       // "/model/layers.3/mlp/down_proj/MatMul"
  std::string precision_mode;  // "a16_w8"
  std::string reason;          // free text from calibrate, may be empty
};

// What the plan adds to the default A8W4 on the device, as calibrate counted
// it (key `budget`): weights of the layers raised to 8 bits (half a byte
// more per weight) and activations raised to 16 bits (a byte more per value
// of one prefill chunk).
struct PlanCost {
  int64_t extra_weight_bytes = 0;
  int64_t extra_activation_bytes = 0;
  int64_t default_weight_bytes = 0;  // the compressible convs' weights at the default mode
};

struct PrecisionPlan {
  std::string origin;                  // the file, for messages
  std::string model;                   // `model`: the export calibrate ran on; may be empty
  std::string default_mode = "a8_w4";  // plan.default_mode: the compressible convs' mode
  std::vector<PlanEntry> entries;
  std::optional<PlanCost> cost;  // absent when the file has no `budget`
};

// Reads and checks quantization.json (version 1): every field the plan uses
// is validated, and a bad one is reported with the file and the field
// (BadInput). `budget`, when present, must hold whole non-negative byte
// counts. Other keys are ignored.
PrecisionPlan read_precision_plan(const std::filesystem::path& path);

struct MappedEntry {
  const PlanEntry* entry = nullptr;
  std::vector<std::string> layers;  // HN layers listing the node, document order
};

// Every plan entry with the HN layers whose original_names contain its
// node. An entry that maps to no layer, and two entries giving one layer
// different modes, are refused (BadInput) with every such entry named and,
// for an unmapped one, the closest original names and their layers.
std::vector<MappedEntry> map_plan_to_layers(const PrecisionPlan& plan, const HnModel& hn);

}  // namespace llm2hef::core::har
