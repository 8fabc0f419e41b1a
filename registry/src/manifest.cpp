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

json make_manifest(const plugins::LoadedAdapter& adapter, const Publisher& publisher) {
  const sdk::AdapterInfo& info = adapter.info();
  json m = json::object();
  m["manifest_version"] = kManifestVersion;
  m["name"] = info.name;
  m["version"] = info.version;
  if (!info.description.empty()) m["description"] = info.description;
  m["architectures"] = info.architectures;
  m["model_types"] = info.model_types;
  m["sdk_abi"] = LLM2HEF_ADAPTER_ABI_VERSION;
  m["sdk_fingerprint"] = host_fingerprint();
  m["library"] = {{"file", adapter.path().filename().string()},
                  {"sha256", sha256_file_hex(adapter.path())},
                  {"size", std::filesystem::file_size(adapter.path())}};
  m["license"] = publisher.license;
  m["maintainer"] = publisher.maintainer;
  if (publisher.homepage) m["homepage"] = *publisher.homepage;

  const auto violations = manifest_schema().validate(m);
  if (!violations.empty())
    throw BadInput("manifest for " + adapter.path().string() + " would be invalid: " + describe(violations));
  return m;
}

json make_index(std::vector<json> manifests) {
  std::sort(manifests.begin(), manifests.end(),
            [](const json& a, const json& b) { return a.value("name", "") < b.value("name", ""); });
  return {{"index_version", kIndexVersion}, {"adapters", std::move(manifests)}};
}

bool is_index(const json& document) { return document.is_object() && document.contains("index_version"); }

}  // namespace llm2hef::registry
