#include "llm2hef/registry/search.hpp"

#include <algorithm>
#include <cctype>

namespace llm2hef::registry {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

bool manifest_matches(const AdapterManifest& manifest, const std::string& text) {
  if (text.empty()) return true;
  const std::string needle = lower(text);
  auto has = [&](const std::string& hay) { return lower(hay).find(needle) != std::string::npos; };
  if (has(manifest.name) || has(manifest.description.value_or(""))) return true;
  const std::vector<std::string> model_types = manifest.listed_model_types();
  return std::any_of(manifest.architectures.begin(), manifest.architectures.end(), has) ||
         std::any_of(model_types.begin(), model_types.end(), has);
}

std::vector<SearchMatch> search_index(const SignedIndex& index, const std::string& text,
                                      const std::map<std::string, std::string>& installed) {
  std::map<std::string, std::vector<const IndexEntry*>> by_name;
  for (const auto& e : index.entries)
    if (manifest_matches(e.manifest, text)) by_name[e.name()].push_back(&e);
  std::vector<SearchMatch> out;
  for (auto& [name, entries] : by_name) {
    std::sort(entries.begin(), entries.end(), [](const IndexEntry* x, const IndexEntry* y) {
      return compare_versions(x->version(), y->version()) > 0;
    });
    SearchMatch match{name, {}, std::nullopt};
    for (const IndexEntry* e : entries) match.versions.push_back({e, incompatibility(e->manifest)});
    if (const auto it = installed.find(name); it != installed.end()) match.installed = it->second;
    out.push_back(std::move(match));
  }
  return out;
}

}  // namespace llm2hef::registry
