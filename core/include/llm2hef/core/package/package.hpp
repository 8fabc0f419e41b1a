// `llm2hef package`: a checked HEF and its export, written into the model
// store hailo-ollama reads (hailo_model_zoo_genai v5.1.1,
// src/library/model/simple_store.cpp and blob_resource.cpp):
//
//   STORE/blob/sha256_<hex>                       the HEF, named by its SHA-256
//   STORE/manifests/<name>/<tag>/manifest.json    what the server reads at startup
//
// STORE is the server's `models` folder (by default the one hailo-ollama
// itself would pick; see default_store()). The store is changed all or
// nothing, blobs are never overwritten, and a HEF that fails `hef check`
// against the export's manifest is refused. docs/package.md.
#pragma once

#include <nlohmann/json.hpp>

#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace llm2hef::core::package {

// NAME[:TAG] as hailo-ollama keys models: "<name>:<tag>", both taken from the
// two folder names above manifest.json.
struct ModelRef {
  std::string name;
  std::string tag;
  std::string key() const { return name + ":" + tag; }
};

// The tag when none is given. hailo-ollama itself has no default: it looks
// the requested name up as written, so clients must ask for NAME:latest.
inline constexpr const char* kDefaultTag = "latest";

// UsageError unless NAME and TAG are each one folder name hailo-ollama can
// key by: 1-128 of [A-Za-z0-9._-], starting with a letter or a digit.
ModelRef parse_model_ref(const std::string& text);

// The `models` folder hailo-ollama would use: the first of
// $XDG_DATA_HOME (else $HOME/.local/share) and each $XDG_DATA_DIRS entry
// (else /usr/share:/usr/local/share) that holds a `hailo-ollama` folder, plus
// /hailo-ollama/models. UsageError naming the places looked at when none does.
std::filesystem::path default_store();

struct PackageOptions {
  std::filesystem::path hef;              // the compiled HEF
  std::filesystem::path export_manifest;  // OUT/manifest.json written by `llm2hef export`
  std::filesystem::path store;            // the `models` folder
  // --config NEW.json: the hailo-config.json a HEF patched with `hef
  // set-config` carries, in place of the export's resources/hailo-config.json.
  std::optional<std::filesystem::path> config;
  // --plan FILE: the quantization.json compile.py applied; by default the one
  // compile.py itself takes by default, OUT/quantization.json, when present.
  std::optional<std::filesystem::path> plan;
  ModelRef model;
  bool force = false;  // replace an existing NAME:TAG manifest
  // Package a chat template that uses what hailo-ollama's older minja lacks
  // (older_minja.hpp), which is otherwise refused (Unsupported, exit 4).
  bool force_template = false;
  bool progress = false;  // progress bars while hashing and copying
  // HailoRT major.minor on the device that runs hailo-ollama: a HEF with
  // STRICT_RUNTIME_VERSIONING loads only where it equals the DFC's.
  std::array<uint32_t, 2> hailort = hef::kDocumentedHailort;
};

struct PackageResult {
  ModelRef model;
  std::filesystem::path store, blob, manifest;
  std::string sha256;
  uint64_t hef_bytes = 0;
  bool blob_reused = false;                 // an identical blob was already there (hash verified)
  std::optional<std::string> replaced_hef;  // --force: hef_h10h of the manifest replaced
  nlohmann::ordered_json ollama_manifest;   // what was written
  nlohmann::json hef_check;                 // the `hef check` report (rules::report_json)
  std::vector<std::string> notes;           // choices worth telling the user (stderr)
  // What may stop the server from listing the model although the store is
  // right (e.g. a store laid out for hailo-ollama in Docker); stderr.
  std::vector<std::string> warnings;
};

// Checks everything first, then writes; on any error the store is left as it
// was and the error names the file and field at fault.
PackageResult package_model(const PackageOptions& options);

// Inputs the hailo-ollama manifest is built from, as `llm2hef export` wrote them.
struct ExportFacts {
  ExportManifest manifest;      // OUT/manifest.json
  nlohmann::json hailo_config;  // OUT/resources/hailo-config.json
  nlohmann::json tokenizer;     // OUT/resources/tokenizer.json
  std::string manifest_path;    // for messages
  // Where hailo_config was read from, for messages: resources/hailo-config.json
  // beside the manifest, or package --config.
  std::string hailo_config_path;
  // The precision plan the HEF was compiled with, when there is one: its
  // modes make details.quantization_level.
  std::optional<har::PrecisionPlan> plan;
};

// The manifest.json hailo-ollama reads, for a HEF whose SHA-256 is `sha256`.
// Throws BadInput naming the export file and field when a value is missing.
nlohmann::ordered_json make_ollama_manifest(const ExportFacts& facts, const std::string& sha256,
                                            std::vector<std::string>& notes);

}  // namespace llm2hef::core::package
