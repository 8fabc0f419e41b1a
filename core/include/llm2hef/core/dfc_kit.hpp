// What the DFC needs besides the ONNX: the model scripts for optimize and
// compile (hailo-contract.md sections 7-8), the Python driver compile.py and
// manifest.json, which records everything the driver and `llm2hef inputs`
// read back.
#pragma once

#include <string>

#include "llm2hef/core/export_manifest.hpp"

#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// A DFC network name: lowercase, [a-z0-9_], starting with a letter.
std::string dfc_scope_name(const std::string& model_name);

std::string optimize_script(const std::string& scope, const sdk::Plan& plan, int64_t calib_size);
std::string compile_script(const std::string& scope);

// The manifest is the driver's only input besides the files it names.
std::string compile_driver(const ExportManifest& manifest);

// The first lines of every Python script export writes: shebang, which
// llm2hef and which model it was generated for, and "do not edit".
std::string generated_script_header(const ExportManifest& manifest);

}  // namespace llm2hef::core
