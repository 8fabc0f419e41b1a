// compile.py, the Python driver that runs the DFC steps on the user's DFC
// machine. manifest.json is its only input besides the files it names.
#pragma once

#include <string>

#include "llm2hef/core/manifest/export_manifest.hpp"

namespace llm2hef::core {

std::string compile_driver(const ExportManifest& manifest);

// The first lines of every Python script export writes: shebang, which
// llm2hef and which model it was generated for, and "do not edit".
std::string generated_script_header(const ExportManifest& manifest);

}  // namespace llm2hef::core
