#include "llm2hef/registry/manifest.hpp"

#include <algorithm>
#include <filesystem>

#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

using nlohmann::json;

const char* host_fingerprint() {
  // Expanded in this translation unit, which is compiled with the host.
  static constexpr const char* fingerprint = LLM2HEF_BUILD_FINGERPRINT;
  return fingerprint;
}

AdapterManifest parse_adapter_manifest(const json& document, const std::string& origin) {
  const auto violations = manifest_schema().validate(document);
  if (!violations.empty()) throw BadInput(origin + ": " + describe(violations));
  return adapter_manifest_from_valid(document);
}

AdapterManifest adapter_manifest_from_valid(const json& document) {
  AdapterManifest m;
  m.manifest_version = document["manifest_version"].get<int64_t>();
  m.name = document["name"].get<std::string>();
  m.version = document["version"].get<std::string>();
  if (document.contains("description")) m.description = document["description"].get<std::string>();
  m.architectures = document["architectures"].get<std::vector<std::string>>();
  if (document.contains("model_types")) m.model_types = document["model_types"].get<std::vector<std::string>>();
  m.sdk_abi = document["sdk_abi"].get<int64_t>();
  if (document.contains("sdk_fingerprint")) m.sdk_fingerprint = document["sdk_fingerprint"].get<std::string>();
  const json& library = document["library"];
  m.library.file = library["file"].get<std::string>();
  m.library.sha256 = library["sha256"].get<std::string>();
  if (library.contains("size")) m.library.size = library["size"].get<uint64_t>();
  if (library.contains("url")) m.library.url = library["url"].get<std::string>();
  m.license = document["license"].get<std::string>();
  m.maintainer = document["maintainer"].get<std::string>();
  if (document.contains("homepage")) m.homepage = document["homepage"].get<std::string>();
  return m;
}

json adapter_manifest_json(const AdapterManifest& m) {
  json d = json::object();
  d["manifest_version"] = m.manifest_version;
  d["name"] = m.name;
  d["version"] = m.version;
  if (m.description) d["description"] = *m.description;
  d["architectures"] = m.architectures;
  if (m.model_types) d["model_types"] = *m.model_types;
  d["sdk_abi"] = m.sdk_abi;
  if (m.sdk_fingerprint) d["sdk_fingerprint"] = *m.sdk_fingerprint;
  json library = {{"file", m.library.file}, {"sha256", m.library.sha256}};
  if (m.library.size) library["size"] = *m.library.size;
  if (m.library.url) library["url"] = *m.library.url;
  d["library"] = std::move(library);
  d["license"] = m.license;
  d["maintainer"] = m.maintainer;
  if (m.homepage) d["homepage"] = *m.homepage;
  return d;
}

AdapterManifest make_manifest(const plugins::LoadedAdapter& adapter, const Publisher& publisher) {
  const sdk::AdapterInfo& info = adapter.info();
  AdapterManifest m;
  m.name = info.name;
  m.version = info.version;
  if (!info.description.empty()) m.description = info.description;
  m.architectures = info.architectures;
  m.model_types = info.model_types;
  m.sdk_abi = LLM2HEF_ADAPTER_ABI_VERSION;
  m.sdk_fingerprint = host_fingerprint();
  m.library = {adapter.path().filename().string(), sha256_file_hex(adapter.path()),
               std::filesystem::file_size(adapter.path()), std::nullopt};
  m.license = publisher.license;
  m.maintainer = publisher.maintainer;
  m.homepage = publisher.homepage;

  const auto violations = manifest_schema().validate(adapter_manifest_json(m));
  if (!violations.empty())
    throw BadInput("manifest for " + adapter.path().string() + " would be invalid: " + describe(violations));
  return m;
}

json make_index(std::vector<AdapterManifest> manifests) {
  std::sort(manifests.begin(), manifests.end(),
            [](const AdapterManifest& a, const AdapterManifest& b) { return a.name < b.name; });
  json adapters = json::array();
  for (const AdapterManifest& m : manifests) adapters.push_back(adapter_manifest_json(m));
  return {{"index_version", kIndexVersion}, {"adapters", std::move(adapters)}};
}

bool is_index(const json& document) { return document.is_object() && document.contains("index_version"); }

}  // namespace llm2hef::registry
