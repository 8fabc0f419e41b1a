// calibrate.py: activation ranges, the precision plan and the fake-quantization
// proxy of the DFC, run by `llm2hef calibrate` under onnxruntime
// (docs/quantization.md). Its source is core/src/dfc/calibrate.py, compiled
// in; like compile.py it reads manifest.json and the files beside it.
#pragma once

#include <string>
#include <string_view>

#include "llm2hef/core/manifest/export_manifest.hpp"

namespace llm2hef::core {

inline constexpr const char* kCalibrateScriptName = "calibrate.py";

std::string calibrate_script(const ExportManifest& manifest);

// core/src/dfc/calibrate.py as it is in the source tree (without the header
// calibrate_script() adds): compile.py takes its prompt-file block from it.
std::string_view calibrate_script_source();

}  // namespace llm2hef::core
