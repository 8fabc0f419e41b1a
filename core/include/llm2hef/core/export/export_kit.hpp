// The export kit: every file `llm2hef export` writes into OUT, with what it
// is, stated once. manifest.json's "files", `export --help` and the test
// that compares them with an export's folder all read this table, so a file
// added to the kit is added here or a test names it.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "llm2hef/core/dfc/calibrate_script.hpp"
#include "llm2hef/core/dfc/validate_script.hpp"

namespace llm2hef::core {

struct ExportKitFile {
  std::string_view path;         // relative to OUT
  std::string_view description;  // manifest.json's "files" value and export --help's line
  std::string_view help = {};    // export --help's line where the manifest's reads only there
};

// In the order export --help lists them (manifest.json sorts by path).
inline constexpr std::array<ExportKitFile, 12> kExportKit = {{
    {"model.onnx", "the DFC-parsable graph (static shapes, six runtime inputs, last-position logits)"},
    {"model.onnx.data", "its weights (ONNX external data)"},
    {"resources/embeddings.npy",
     "embedding matrix [vocab, hidden] float32, for add_external_resources (embeddings.bin)"},
    {"resources/theta.npy", "theta vector float32, for add_external_resources (rope_theta_data.bin)"},
    {"resources/tokenizer.json", "tokenizer for add_external_file, fixed for the runtime"},
    {"resources/hailo-config.json", "runtime configuration for add_external_file"},
    {"optimize.alls", "model script for runner.optimize()"},
    {"compile.alls", "model script for runner.compile()"},
    {"compile.py", "DFC driver: parse, HN fixups, resources, calibration, optimize, compile"},
    {kValidateScriptName,
     "on-device check (Hailo-10H host, HailoRT Python): generation through genai.LLM, "
     "per-position agreement of the __prefill/__tbt groups with model.onnx in fp32"},
    {kCalibrateScriptName,
     "activation ranges, precision plan and a fake-quantization proxy of the DFC, "
     "run by `llm2hef calibrate` with onnxruntime (docs/quantization.md)"},
    {"manifest.json", "this file", "what was exported and how"},
}};

// manifest.json's "files": path -> description.
std::map<std::string, std::string> export_kit_manifest_files();

// The kit as export --help lists it: one file a line, its description
// wrapped under itself so that no line is longer than `width`.
std::string export_kit_help(std::size_t width);

}  // namespace llm2hef::core
