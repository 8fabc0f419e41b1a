// `llm2hef export`: checkpoint folder in, DFC-ready folder out, atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/export/model_plan.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/plugins/host.hpp"

namespace llm2hef::core {

// The planning part (model_dir, cache_size, prefill, lm_head_shards, adapter,
// adapter_options) is shared with inspect.
struct ExportRequest : PlanRequest {
  std::filesystem::path output;
  int64_t calib_size = 64;  // calibset_size written into optimize.alls
  std::string name;         // DFC network name; default from the folder name
  bool force = false;       // replace an existing output folder
  bool progress = false;
};

// Returns the manifest written to OUT/manifest.json.
ExportManifest export_model(const ExportRequest& request, const plugins::AdapterHost& host);

// Runs every `llm2hef lint` rule on the written graph, with those that need
// the manifest (onnx's checker, the six inputs in the manifest's order and
// shapes, one last-position logits output). Throws InternalError naming each
// rule with an error finding.
void check_graph_contract(const std::filesystem::path& model_path, const ExportManifest& manifest);

}  // namespace llm2hef::core
