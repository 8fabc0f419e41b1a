// Assembling the published index from the reviewed manifests in the
// repository (registry/index/<name>/<version>.json): `llm2hef registry
// collect`, run by CI on every change and at release, before `registry sign`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::registry {

// Every *.json below `dir` (recursively; hidden files and folders skipped),
// each checked as an index entry (check_index_entry), none named like a
// first-party adapter, no name@version twice and no library file name shared
// by two adapters. Returns {"index_version": 1, "adapters": [...]} sorted by
// name, then version. BadInput naming the file and field at fault.
nlohmann::json collect_index(const std::filesystem::path& dir, const std::vector<std::string>& first_party_names);

// The adapter names of an index file (build/adapters/index.json, which the
// build writes for the first-party adapters).
std::vector<std::string> index_names(const std::filesystem::path& index_file);

}  // namespace llm2hef::registry
