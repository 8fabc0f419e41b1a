// `llm2hef export`: checkpoint folder in, DFC-ready folder out, atomically.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/host.hpp"

namespace llm2hef::core {

struct ExportRequest {
  std::filesystem::path model_dir, output;
  int64_t cache_size = 0, prefill = 0;
  int64_t lm_head_shards = 0;  // 0 = adapter's choice
  int64_t calib_size = 64;     // calibset_size written into optimize.alls
  std::optional<std::string> adapter;
  std::map<std::string, std::string> adapter_options;
  std::string name;            // DFC network name; default from the folder name
  bool force = false;          // replace an existing output folder
  bool refuse_nonfinite = false;  // a NaN/Inf weight fails the export (else: warned, recorded in manifest.json)
  bool progress = false;
};

// Throws UsageError unless cache >= 2 and 1 <= prefill <= cache (shared by
// export and inspect).
void check_cache_and_prefill(int64_t cache_size, int64_t prefill);

// Returns the manifest written to OUT/manifest.json.
nlohmann::json export_model(const ExportRequest& request, const plugins::AdapterHost& host);

// Runs every `llm2hef lint` rule on the written graph, with those that need
// the manifest (onnx's checker, the six inputs in the manifest's order and
// shapes, one last-position logits output). Throws InternalError naming each
// rule with an error finding.
void check_graph_contract(const std::filesystem::path& model_path, const nlohmann::json& manifest);

}  // namespace llm2hef::core
