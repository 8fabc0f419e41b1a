// validate_on_device.py: the check a user runs on the Hailo-10H host once the
// DFC has written model.hef. It generates through HailoRT's genai.LLM and
// compares the chip's prefill/tbt logits with model.onnx in fp32
// (docs/on-device-check.md). Like compile.py it reads everything from
// manifest.json and the files beside it.
#pragma once

#include <string>

#include "llm2hef/core/manifest/export_manifest.hpp"

namespace llm2hef::core {

inline constexpr const char* kValidateScriptName = "validate_on_device.py";

std::string validate_script(const ExportManifest& manifest);

}  // namespace llm2hef::core
