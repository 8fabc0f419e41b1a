// `llm2hef inspect`: what an export of a checkpoint would produce and whether
// it fits the Hailo-10H, without writing anything.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/core/export/model_plan.hpp"
#include "llm2hef/plugins/host.hpp"
#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// On-board memory of the Hailo-10H.
inline constexpr double kDeviceMemoryBytes = 8.0 * 1024 * 1024 * 1024;

// The estimate is called close to the device within this fraction of it.
inline constexpr double kNearDeviceFraction = 0.05;

// The calibration samples inspect sizes compile.py's optimize for: export's
// default --calib-size.
inline constexpr int64_t kDefaultCalibSamples = 64;

// Planned exactly as export plans (model_plan.hpp), with the same default
// cache and prefill.
// --plan FILE: a quantization.json from `llm2hef calibrate`, whose cost
// (weights raised to 8 bits, activations to 16) is added to the estimate.
struct InspectRequest : PlanRequest {
  std::optional<std::filesystem::path> precision_plan;
};

// The report; "supported" is false (with "refused" saying why) when the
// adapter's plan refuses the model. Throws for unreadable input.
nlohmann::json inspect_model(const InspectRequest& request, const plugins::AdapterHost& host);

std::string inspect_text(const nlohmann::json& report);

// The exit status `export` would end with: 4 when the model is refused, the
// status of a resource problem that would stop it (3 or 4), else 0.
int inspect_exit_status(const nlohmann::json& report);

}  // namespace llm2hef::core
