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
nlohmann::json make_manifest(const plugins::LoadedAdapter& adapter, const Publisher& publisher);

// An index of manifests (sorted by adapter name).
nlohmann::json make_index(std::vector<nlohmann::json> manifests);

// True when the document looks like an index rather than a single manifest.
bool is_index(const nlohmann::json& document);

}  // namespace llm2hef::registry
