// manifest.json: what `llm2hef export` wrote, as one type. export writes it;
// har fix, har lines, hef check, package, inputs and the generated scripts
// read it. Its keys are spelled only in export_manifest.cpp; the shape is
// published as registry/schema/export-manifest.schema.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/registry/json_schema.hpp"
#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// Version 2 renamed format_version (1) to manifest_version and moved the
// adapter's cost figures out of `options` into `cache_cost`.
inline constexpr int64_t kManifestVersion = 2;

struct ManifestInput {
  std::string name;                     // ONNX input name
  std::string role;                     // hailo-config input_layers_names_suffixes key
  std::vector<int64_t> shape;           // graph shape
  std::string dfc_layer;                // input_layerN
  std::vector<std::string> dfc_format;  // net_input_format axes
};

struct ManifestOutput {
  std::string name;
  std::vector<int64_t> shape;
};

struct ManifestModel {
  std::string name, dir;
  nlohmann::json architectures = nlohmann::json::array();  // config.json's, as found
  std::string model_type;
  // The checkpoint's parameters (every tensor's elements, as inspect counts
  // them); absent in manifests written before it was recorded.
  std::optional<int64_t> parameters;
};

struct ManifestDfc {
  std::string scope;
  int64_t calib_size = 0;
  std::vector<std::string> network_groups;
};

struct ExportManifest {
  int64_t manifest_version = kManifestVersion;
  std::string llm2hef_version;
  // registry::resolution_json(): name, version, file, matched_by, matched,
  // passed_over (and warning). Kept as the registry writes it.
  nlohmann::json adapter = nlohmann::json::object();
  ManifestModel model;
  int64_t cache_size = 0, prefill = 0;
  sdk::ModelDims dims;
  int64_t theta_length = 0;
  int64_t pe_q_tiles = 0, pe_k_tiles = 0;
  std::vector<ManifestInput> inputs;
  std::vector<ManifestOutput> outputs;
  std::vector<int64_t> lm_head_shards;
  std::string lm_head_shard_reason;
  nlohmann::json options = nlohmann::json::object();  // the adapter's resolved options
  sdk::CacheCost cache_cost;                          // written only when the adapter states one
  std::vector<std::string> rewrites, notes, resource_changes;
  // Tensors found holding NaN/Inf, {tensor, file, first_index, value} each;
  // written only when there is one.
  nlohmann::json nonfinite_weights = nlohmann::json::array();
  std::map<std::string, std::string> graph_annotations;
  ManifestDfc dfc;
  std::map<std::string, std::string> files;  // file -> what it is

  std::string adapter_name() const;
  // The input with this role, or nullptr.
  const ManifestInput* input(std::string_view role) const;
};

// registry/schema/export-manifest.schema.json, compiled in.
const registry::JsonSchema& export_manifest_schema();

// The manifest of an export of `plan` (everything but adapter, model, dfc,
// files, graph annotations and resource changes, which export fills).
ExportManifest manifest_for_plan(const sdk::Plan& plan);

// The JSON document (keys sorted, as nlohmann::json orders them).
nlohmann::json manifest_json(const ExportManifest& manifest);
// What export writes to manifest.json.
std::string manifest_text(const ExportManifest& manifest);

// Reads a manifest: checked against the schema, then typed. Throws BadInput
// (exit 3) "<origin>: field '<key>': ..." naming every field at fault.
// Version 1 (format_version, cost figures among the options) is read as
// version 2.
ExportManifest parse_manifest(const nlohmann::json& doc, const std::string& origin);
ExportManifest read_manifest(const std::filesystem::path& path);

}  // namespace llm2hef::core
