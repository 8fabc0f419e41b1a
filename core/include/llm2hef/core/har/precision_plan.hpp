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
#include <string_view>
#include <vector>

#include "llm2hef/core/har/hn_model.hpp"

namespace llm2hef::core::har {

// The precision modes public Hailo sources write in `quantization_param`
// lines (docs/quantization-gate.md lists where each was seen). A plan
// naming any other is refused rather than handed to an optimize that runs
// for hours before the DFC rejects it.
const std::vector<std::string>& known_precision_modes();

// What a plan may be (docs/reliability.md, "Size limits"), checked before
// anything is built from it. calibrate's quantization.json is about 20 KB
// per decoder layer, mostly statistics (ranges, weights), under 1 MB for a
// 40-layer model; those are parsed for syntax but never built.
inline constexpr std::size_t kMaxPlanBytes = std::size_t{16} << 20;
// An ONNX node name in the plan: llm2hef's are under 100 bytes
// ("/model/layers.11/mlp/down_proj/MatMul").
inline constexpr std::size_t kMaxPlanNameBytes = 1024;

// The one `weight_group_size` a plan entry may ask for: the value Hailo's own
// Hailo-10H script for Qwen2-1.5B-Instruct writes on its 4-bit block convs
// (`quantization_param([...], weight_group_size=128)`;
// docs/quantization-gate.md). No other value appears in a public Hailo-10H
// script, so no other is passed to an optimize that runs for hours.
inline constexpr int64_t kWeightGroupSize = 128;

// Whether `mode` stores 4-bit weights (a8_w4, a16_w4_a16): the only modes
// Hailo's script gives weight_group_size to.
bool has_4bit_weights(const std::string& mode);

struct PlanEntry {
  size_t index = 0;            // position in plan.lines, for messages
  std::string onnx_node;       // "/model/layers.3/mlp/down_proj/MatMul"
  std::string precision_mode;  // "a16_w8"
  std::string reason;          // free text from calibrate, may be empty
  int64_t extra_bytes = 0;     // what calibrate counted this line to add; 0 when absent
  // kWeightGroupSize when the entry asks for group-wise weight scales
  // (`weight_group_size`), 0 when it does not (no weight_group_size line).
  int64_t weight_group_size = 0;
};

// What the plan adds to the default A8W4 on the device, as calibrate counted
// it (key `budget`): weights of the layers raised to 8 bits (half a byte
// more per weight) and activations raised to 16 bits (a byte more per value
// of one prefill chunk).
struct PlanCost {
  int64_t extra_weight_bytes = 0;
  int64_t extra_activation_bytes = 0;
  int64_t default_weight_bytes = 0;  // the compressible convs' weights at the default mode
  int64_t extra_bytes = 0;           // extra_weight_bytes + extra_activation_bytes (checked when read)
};

struct PrecisionPlan {
  std::string origin;                  // the file, for messages
  std::string model;                   // `model`: the export calibrate ran on; may be empty
  std::optional<int64_t> cache_size;   // calibration.cache_size: that export's cache; absent in old plans
  std::string default_mode = "a8_w4";  // plan.default_mode: the compressible convs' mode
  std::vector<PlanEntry> entries;
  std::optional<PlanCost> cost;  // absent when the file has no `budget`
};

// Reads and checks quantization.json (version 1): every field the plan uses
// is validated, and a bad one is reported with the file and the field
// (BadInput): a file over kMaxPlanBytes, a node name over kMaxPlanNameBytes,
// a `model` that is not a string, a `weight_group_size` other than
// kWeightGroupSize or on an entry whose mode has no 4-bit weights. Byte counts (`budget`, each line's
// `extra_bytes`) must be whole and non-negative, and their sums fit in 63
// bits. Other keys are ignored.
PrecisionPlan read_precision_plan(const std::filesystem::path& path);
// The same on the file's text (`origin` names it in messages).
PrecisionPlan parse_precision_plan(std::string_view text, const std::string& origin);

// A plan counts the nodes and costs of the export calibrate measured: for
// another model (its `model` is not `model_name`), or for the same model at
// another cache (calibration.cache_size is not `cache`; activation costs grow
// with it), its figures are wrong. BadInput naming the field and what to do;
// a plan without these fields (older calibrate) passes. Used by inspect
// --plan and package.
void check_plan_is_for(const PrecisionPlan& plan, const std::string& model_name, int64_t cache);

// hailo-ollama's quantization_level for a HEF compiled with `plan` (nullptr:
// none): the default mode as Hailo writes it ("A8W4"), then how many lines
// the plan raises to each other mode ("A8W4 + 24 A16W16 + 1 A8W8").
std::string quantization_level(const PrecisionPlan* plan);

// `base_bytes` + the plan's extra bytes, or BadInput naming the plan's
// budget when the sum does not fit in 63 bits (an estimate must never wrap).
int64_t bytes_with_plan(int64_t base_bytes, const PrecisionPlan& plan);

struct MappedEntry {
  const PlanEntry* entry = nullptr;
  std::vector<std::string> layers;  // HN layers listing the node, document order
};

// Every plan entry with the HN layers whose original_names contain its
// node, found through one hash index of the HN's original names. Refused
// (BadInput, each such entry named, the first kListedProblems of each kind):
// an entry that maps to no layer (with the closest original names and their
// layers), an entry mapping to a layer whose type its mode is not written
// on (mode_layer_types), two entries giving one layer different modes or
// different weight_group_size, an entry with weight_group_size mapping to a
// layer that is not a conv or whose input width is not a whole number of
// groups (what the DFC does with a partial group is not public).
std::vector<MappedEntry> map_plan_to_layers(const PrecisionPlan& plan, const HnModel& hn);
inline constexpr std::size_t kListedProblems = 20;

// Whether public Hailo model scripts give `mode` to layers of this type, as
// the table of docs/quantization-gate.md ("Precision modes", column "on
// layers") lists them: conv for every mode; ew_add, ew_mult, normalization
// or reduce_sum for some a16 modes; never softmax, matmul, slice or an
// output layer. An input layer only as the default script has it: a16_w16
// on `<scope>/input_layer1`, the embeddings (hailo-contract.md section 7).
bool mode_applies_to(const std::string& mode, const std::string& layer_type, const std::string& layer);

}  // namespace llm2hef::core::har
