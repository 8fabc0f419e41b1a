// The export kit: every file `llm2hef export` writes into OUT, with what it
// is, stated once. The export's writes take their paths from this table
// (kit_path), manifest.json's "files" and `export --help` its descriptions,
// and a test compares them with an export's folder, so a file added to the
// kit is added here (a KitFile the writer's switch must handle) or a test
// names it.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "llm2hef/core/dfc/calibrate_script.hpp"
#include "llm2hef/core/dfc/validate_script.hpp"

namespace llm2hef::core {

// Which file of the kit: the writers switch over it (no default), so a new
// file without a writer does not compile.
enum class KitFile {
  graph,
  weights,
  embeddings,
  theta,
  tokenizer,
  hailo_config,
  optimize_script,
  compile_script,
  compile_driver,
  validate_script,
  calibrate_script,
  manifest,
};

struct ExportKitFile {
  KitFile file;
  std::string_view path;         // relative to OUT
  std::string_view description;  // manifest.json's "files" value and export --help's line
  std::string_view help = {};    // export --help's line where the manifest's reads only there
  bool executable = false;       // a Python driver the user runs (chmod +x)
};

// In the order export --help lists them (manifest.json sorts by path).
inline constexpr std::array<ExportKitFile, 12> kExportKit = {{
    {KitFile::graph, "model.onnx", "the DFC-parsable graph (static shapes, six runtime inputs, last-position logits)"},
    {KitFile::weights, "model.onnx.data", "its weights (ONNX external data)"},
    {KitFile::embeddings, "resources/embeddings.npy",
     "embedding matrix [vocab, hidden] float32, for add_external_resources (embeddings.bin)"},
    {KitFile::theta, "resources/theta.npy", "theta vector float32, for add_external_resources (rope_theta_data.bin)"},
    {KitFile::tokenizer, "resources/tokenizer.json", "tokenizer for add_external_file, fixed for the runtime"},
    {KitFile::hailo_config, "resources/hailo-config.json", "runtime configuration for add_external_file"},
    {KitFile::optimize_script, "optimize.alls", "model script for runner.optimize()"},
    {KitFile::compile_script, "compile.alls", "model script for runner.compile()"},
    {KitFile::compile_driver,
     "compile.py",
     "DFC driver: parse, HN fixups, resources, calibration, optimize, compile",
     {},
     true},
    {KitFile::validate_script,
     kValidateScriptName,
     "on-device check (Hailo-10H host, HailoRT Python): generation through genai.LLM, "
     "per-position agreement of the __prefill/__tbt groups with model.onnx in fp32",
     {},
     true},
    {KitFile::calibrate_script,
     kCalibrateScriptName,
     "activation ranges, precision plan and a fake-quantization proxy of the DFC, "
     "run by `llm2hef calibrate` with onnxruntime (docs/quantization.md)",
     {},
     true},
    {KitFile::manifest, "manifest.json", "this file", "what was exported and how"},
}};

// The path of `file` relative to OUT, as the table states it.
constexpr std::string_view kit_path(KitFile file) {
  for (const ExportKitFile& f : kExportKit)
    if (f.file == file) return f.path;
  return {};
}

// manifest.json's "files": path -> description.
std::map<std::string, std::string> export_kit_manifest_files();

// The kit as export --help lists it: one file a line, its description
// wrapped under itself so that no line is longer than `width`.
std::string export_kit_help(std::size_t width);

}  // namespace llm2hef::core
