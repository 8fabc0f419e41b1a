#include "llm2hef/registry/index_collect.hpp"

#include <algorithm>

#include "llm2hef/registry/index_client.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

using nlohmann::json;

json collect_index(const fs::path& dir, const std::vector<std::string>& first_party_names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw BadInput(dir.string() + ": not a folder");
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(".")) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() != ".json") continue;
    // A FIFO or device named like an entry is a mistake to report, not skip.
    if (!it->is_regular_file())
      throw BadInput(it->path().string() + ": not a regular file; every entry is a <name>/<version>.json file");
    files.push_back(it->path());
  }
  if (ec) throw BadInput(dir.string() + ": cannot list: " + ec.message());
  std::sort(files.begin(), files.end());

  std::vector<AdapterManifest> entries;
  std::vector<std::string> origins;
  for (const auto& f : files) {
    AdapterManifest entry = check_index_entry(sdk::read_json(f, sdk::JsonLimits::small_file()), f.string());
    const std::string& name = entry.name;
    // The reviewed path is what a reviewer reads; it must say what the entry is.
    const std::string& version = entry.version;
    if (f.parent_path().filename() != name || f.filename() != version + ".json")
      throw BadInput(f.string() + ": fields 'name' and 'version': the entry is " + name + "@" + version +
                     ", so its file is " + name + "/" + version + ".json");
    if (std::find(first_party_names.begin(), first_party_names.end(), name) != first_party_names.end())
      throw BadInput(f.string() + ": field 'name': '" + name +
                     "' is a first-party adapter's name; a third-party adapter needs its own name");
    entries.push_back(std::move(entry));
    origins.push_back(f.string());
  }
  check_index_unique(entries, origins);
  std::sort(entries.begin(), entries.end(), [](const AdapterManifest& a, const AdapterManifest& b) {
    if (a.name != b.name) return a.name < b.name;
    return compare_versions(a.version, b.version) < 0;
  });
  json adapters = json::array();
  for (const AdapterManifest& e : entries) adapters.push_back(adapter_manifest_json(e));
  return {{"index_version", kIndexVersion}, {"adapters", std::move(adapters)}};
}

std::vector<std::string> index_names(const fs::path& index_file) {
  const json doc = sdk::read_json(index_file, sdk::JsonLimits::small_file());
  if (!is_index(doc) || !doc.contains("adapters") || !doc["adapters"].is_array())
    throw BadInput(index_file.string() + ": field 'adapters': not an index");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < doc["adapters"].size(); ++i) {
    const json& a = doc["adapters"][i];
    if (!a.is_object() || !a.contains("name") || !a["name"].is_string())
      throw BadInput(index_file.string() + ": field 'adapters[" + std::to_string(i) + "].name': missing");
    out.push_back(a["name"].get<std::string>());
  }
  return out;
}

}  // namespace llm2hef::registry
