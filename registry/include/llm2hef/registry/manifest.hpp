// Adapter manifests and the adapter index (docs/writing-an-adapter.md,
// "Publishing").
//
// A manifest describes one published adapter library: what it claims, the SDK
// ABI it was built for and the SHA-256 of the .so, plus who publishes it and
// under which license. It sits next to the library it names. Its format is
// registry/schema/adapter-manifest.schema.json, compiled into the host, so the
// file publishers validate against is the one `llm2hef registry verify` uses.
//
// An index gathers manifests: {"index_version": 1, "adapters": [manifest...]},
// each library named relative to the index's folder. The build writes one for
// the first-party adapters (build/adapters/index.json, installed beside them).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/registry/json_schema.hpp"

namespace llm2hef::registry {

inline constexpr int kManifestVersion = 1;
inline constexpr int kIndexVersion = 1;

// The manifest schema, as shipped in registry/schema/.
const JsonSchema& manifest_schema();

// A manifest as one type: what `registry manifest` writes, an index entry,
// an installed adapter's <name>.adapter.json. Its keys are spelled only in
// manifest.cpp (parse_adapter_manifest, adapter_manifest_json); everything else
// reads the fields.
struct ManifestLibrary {
  std::string file;                // the .so's file name
  std::string sha256;              // lower-case hex
  std::optional<uint64_t> size;    // bytes; required in an index entry
  std::optional<std::string> url;  // required in an index entry; absolute once installed
};

struct AdapterManifest {
  int64_t manifest_version = kManifestVersion;
  std::string name, version;
  std::optional<std::string> description;
  std::vector<std::string> architectures;
  // Absent and empty are kept apart, so that a manifest reads back as written.
  std::optional<std::vector<std::string>> model_types;
  int64_t sdk_abi = 0;
  std::optional<std::string> sdk_fingerprint;
  ManifestLibrary library;
  std::string license, maintainer;
  std::optional<std::string> homepage;

  // model_types, empty when absent.
  std::vector<std::string> listed_model_types() const { return model_types.value_or(std::vector<std::string>{}); }
};

// The document checked against manifest_schema(), as the type. BadInput
// "<origin>: <what the schema refuses>" when it does not pass.
AdapterManifest parse_adapter_manifest(const nlohmann::json& document, const std::string& origin);
// The same for a document that has passed manifest_schema() already (verify
// reports the schema's verdict itself): no second validation.
AdapterManifest adapter_manifest_from_valid(const nlohmann::json& document);

// The document. A document that passed the schema comes back equal from
// adapter_manifest_json(parse_adapter_manifest(document)), so a manifest is
// written again as it was read (an installed one, a collected index entry).
nlohmann::json adapter_manifest_json(const AdapterManifest& manifest);

// The host's own build fingerprint (what a loadable adapter must carry).
const char* host_fingerprint();

// Who publishes an adapter; copied into its manifest.
struct Publisher {
  std::string license;     // SPDX expression or NOASSERTION
  std::string maintainer;  // "Name <mail>"
  std::optional<std::string> homepage;
};

// The manifest of a loaded adapter: claims from info(), the host's ABI version
// and fingerprint (loading succeeded, so the library carries the same), and
// the SHA-256 and size of adapter.path(). The result passes manifest_schema();
// a Publisher field it rejects is a BadInput naming the field.
AdapterManifest make_manifest(const plugins::LoadedAdapter& adapter, const Publisher& publisher);

// An index of manifests (sorted by adapter name).
nlohmann::json make_index(std::vector<AdapterManifest> manifests);

// True when the document looks like an index rather than a single manifest.
bool is_index(const nlohmann::json& document);

}  // namespace llm2hef::registry
