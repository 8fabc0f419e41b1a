// Searching a signed index (`llm2hef registry search`): which adapters match
// a text, each with its versions newest first and whether each build fits
// this llm2hef. The CLI only prints what this returns.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/registry/index_client.hpp"

namespace llm2hef::registry {

// Whether an entry's manifest matches `text`: a case-insensitive substring
// of its name, description, architectures or model_types. An empty text
// matches everything.
bool manifest_matches(const AdapterManifest& manifest, const std::string& text);

struct SearchVersion {
  const IndexEntry* entry = nullptr;  // into the SignedIndex searched
  std::string incompatibility;        // why the build does not fit this llm2hef; empty when it does
};

struct SearchMatch {
  std::string name;
  std::vector<SearchVersion> versions;   // newest first (compare_versions)
  std::optional<std::string> installed;  // the version installed in the user's folder, if any

  // The newest version's manifest: what a listing shows of the adapter.
  const AdapterManifest& newest() const { return versions.front().entry->manifest; }
};

// The adapters of `index` that match `text`, one per name, sorted by name.
// `installed` maps a name to its installed version (installed_versions()).
std::vector<SearchMatch> search_index(const SignedIndex& index, const std::string& text,
                                      const std::map<std::string, std::string>& installed);

}  // namespace llm2hef::registry
