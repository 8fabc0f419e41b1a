#include "llm2hef/registry/verify.hpp"

#include <algorithm>
#include <set>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/plugins/probe.hpp"
#include "llm2hef/registry/claim_sets.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

using nlohmann::json;

// "" when equal as sets, else what is missing from / extra in the library.
std::string compare_claims(const char* what, const std::vector<std::string>& manifest_list,
                           const std::vector<std::string>& reported) {
  const ClaimDifference d = claim_difference(manifest_list, reported);
  std::string out;
  if (!d.only_listed.empty())
    out += std::string(what) + " claimed by the manifest but not by the library: " + joined(d.only_listed);
  if (!d.only_reported.empty())
    out += std::string(out.empty() ? "" : "; ") + what +
           " the library claims but the manifest does not list: " + joined(d.only_reported);
  return out;
}

class Verifier {
 public:
  Verifier(ManifestVerdict& verdict, const VerifyOptions& options) : v_(verdict), options_(options) {}

  void run(const json& document, const fs::path& folder) {
    // The name for the report even when the rest does not pass the schema.
    if (document.is_object() && document.contains("name") && document["name"].is_string())
      v_.adapter = document["name"].get<std::string>();
    const auto violations = manifest_schema().validate(document);
    if (!record("schema", violations.empty(), violations.empty() ? "valid" : describe(violations))) return;
    const AdapterManifest manifest = adapter_manifest_from_valid(document);
    if (!locate_library(manifest.library, folder)) return;
    if (!check_checksum(manifest.library)) return;
    if (!check_abi(manifest)) return;

    // In a throw-away child first: a library that exits or aborts while
    // loading fails this check instead of ending llm2hef.
    if (const std::string died = plugins::probe_in_child(v_.library); !died.empty()) {
      record("load", false, v_.library.string() + ": " + died);
      return;
    }
    std::optional<plugins::LoadedAdapter> loaded;
    try {
      loaded.emplace(plugins::load_adapter(v_.library));
    } catch (const plugins::PluginLoadError& e) {
      record("load", false, e.detail());
      return;
    }
    record("load", true, "loaded");

    const sdk::AdapterInfo& info = loaded->info();
    std::string identity;
    if (info.name != manifest.name)
      identity = "library is adapter '" + info.name + "', manifest says '" + manifest.name + "'";
    if (info.version != manifest.version)
      identity += std::string(identity.empty() ? "" : "; ") + "library is version " + info.version +
                  ", manifest says " + manifest.version;
    if (!record("identity", identity.empty(), identity.empty() ? info.name + " " + info.version : identity)) return;

    std::string claims = compare_claims("architectures", manifest.architectures, info.architectures);
    const std::string types = compare_claims("model_types", manifest.listed_model_types(), info.model_types);
    if (!types.empty()) claims += (claims.empty() ? "" : "; ") + types;
    record("claims", claims.empty(),
           claims.empty() ? std::to_string(info.architectures.size()) + " architecture(s), " +
                                std::to_string(info.model_types.size()) + " model_type(s) match"
                          : claims);
  }

 private:
  bool record(const char* name, bool passed, std::string detail) {
    v_.checks.push_back({name, passed, std::move(detail)});
    return passed;
  }

  // The rule of verify.hpp: --library, else library.file beside the
  // manifest, else a relative library.url against the manifest's folder.
  bool locate_library(const ManifestLibrary& library, const fs::path& folder) {
    if (!options_.library.empty()) {
      v_.library = options_.library;
      return check_library();
    }
    const fs::path beside = folder / library.file;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(beside, ec)) || !library.url) {
      v_.library = beside;
      return check_library(
          " (library.file is looked for in the manifest's folder; pass --library FILE for a "
          "library kept elsewhere)");
    }
    const std::string& url = *library.url;
    const fs::path relative(url);
    const bool plain_relative = url.find("://") == std::string::npos && relative.is_relative() &&
                                std::none_of(relative.begin(), relative.end(),
                                             [](const fs::path& part) { return part == "." || part == ".."; });
    if (!plain_relative) {
      v_.library = beside;
      return record("library", false,
                    beside.string() + ": not found beside the manifest, and library.url '" + url +
                        "' is not a path relative to it (verify reads no URL); pass --library FILE");
    }
    v_.library = folder / relative;
    return check_library(" (neither library.file beside the manifest nor library.url '" + url +
                         "' relative to it; pass --library FILE for a library kept elsewhere)");
  }

  bool check_library(const std::string& where_looked = {}) {
    std::error_code ec;
    const auto status = fs::status(v_.library, ec);
    if (ec || !fs::exists(status)) return record("library", false, v_.library.string() + ": not found" + where_looked);
    if (!fs::is_regular_file(status)) return record("library", false, v_.library.string() + ": not a regular file");
    if (!options_.allow_unsafe) {
      const std::string refusal = plugins::unsafe_file_reason(v_.library);
      if (!refusal.empty()) return record("library", false, v_.library.string() + ": " + refusal);
    }
    return record("library", true, v_.library.string());
  }

  bool check_checksum(const ManifestLibrary& library) {
    // The size first: it costs nothing, and a file of the wrong size (a
    // 10 GB sparse file, say) is refused without hashing all of it.
    if (library.size) {
      std::error_code ec;
      const auto size = fs::file_size(v_.library, ec);
      if (ec || size != *library.size)
        return record("sha256", false,
                      "size mismatch: manifest says " + std::to_string(*library.size) + " bytes, file has " +
                          (ec ? ec.message() : std::to_string(size)) + " (it was not hashed or loaded)");
    }
    std::string actual;
    try {
      actual = sha256_file_hex(v_.library);
    } catch (const Error& e) {
      return record("sha256", false, e.what());
    }
    const std::string& expected = library.sha256;
    if (actual != expected)
      return record("sha256", false,
                    "checksum mismatch: manifest says " + expected + ", file has " + actual +
                        " (the library was changed after the manifest was written; it was not loaded)");
    return record("sha256", true, actual);
  }

  bool check_abi(const AdapterManifest& manifest) {
    const int64_t abi = manifest.sdk_abi;
    if (abi != LLM2HEF_ADAPTER_ABI_VERSION)
      return record("abi", false,
                    "built for SDK ABI " + std::to_string(abi) + ", this llm2hef speaks ABI " +
                        std::to_string(LLM2HEF_ADAPTER_ABI_VERSION));
    if (manifest.sdk_fingerprint && *manifest.sdk_fingerprint != host_fingerprint())
      return record("abi", false,
                    "built with fingerprint '" + *manifest.sdk_fingerprint + "', this llm2hef is '" +
                        host_fingerprint() + "'");
    return record("abi", true, "ABI " + std::to_string(abi));
  }

  ManifestVerdict& v_;
  const VerifyOptions& options_;
};

void verify_document(const json& document, const fs::path& file, const VerifyOptions& options, VerifyReport& report) {
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!is_index(document)) {
    ManifestVerdict& v = report.manifests.emplace_back();
    v.source = file.string();
    Verifier(v, options).run(document, folder);
    return;
  }
  if (document["index_version"] != kIndexVersion)
    throw BadInput(file.string() + ": field 'index_version': this llm2hef reads index version " +
                   std::to_string(kIndexVersion) + ", got " + document["index_version"].dump());
  if (!document.contains("adapters") || !document["adapters"].is_array())
    throw BadInput(file.string() + ": field 'adapters': expected a list of manifests");
  if (document["adapters"].empty()) throw BadInput(file.string() + ": field 'adapters': the index lists no adapter");
  for (std::size_t i = 0; i < document["adapters"].size(); ++i) {
    ManifestVerdict& v = report.manifests.emplace_back();
    v.source = file.string() + "#adapters[" + std::to_string(i) + "]";
    Verifier(v, options).run(document["adapters"][i], folder);
  }
}

}  // namespace

bool ManifestVerdict::passed() const {
  return !checks.empty() && std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.passed; }) &&
         checks.back().name == "claims";
}

bool VerifyReport::passed() const {
  return !manifests.empty() &&
         std::all_of(manifests.begin(), manifests.end(), [](const auto& m) { return m.passed(); });
}

json VerifyReport::to_json() const {
  json list = json::array();
  for (const auto& m : manifests) {
    json checks = json::array();
    for (const auto& c : m.checks) checks.push_back({{"check", c.name}, {"ok", c.passed}, {"detail", c.detail}});
    list.push_back({{"source", m.source},
                    {"adapter", m.adapter.empty() ? json(nullptr) : json(m.adapter)},
                    {"library", m.library.empty() ? json(nullptr) : json(m.library.string())},
                    {"ok", m.passed()},
                    {"checks", checks}});
  }
  return {{"ok", passed()}, {"manifests", list}};
}

std::string VerifyReport::to_text() const {
  std::string out;
  for (const auto& m : manifests) {
    out += (m.passed() ? "PASS  " : "FAIL  ") + (m.adapter.empty() ? std::string("?") : m.adapter) + "  (" + m.source +
           ")\n";
    for (const auto& c : m.checks)
      out += std::string("  ") + (c.passed ? "ok    " : "FAIL  ") + c.name + ": " + c.detail + "\n";
  }
  std::size_t failed = std::count_if(manifests.begin(), manifests.end(), [](const auto& m) { return !m.passed(); });
  out += std::to_string(manifests.size()) + " manifest(s), " + std::to_string(failed) + " failed\n";
  return out;
}

VerifyReport verify_published(const fs::path& path, const VerifyOptions& options) {
  VerifyReport report;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (!options.library.empty())
      throw UsageError("registry verify: --library names the library of one manifest, and " + path.string() +
                       " is a folder; pass the manifest itself");
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(path, ec))
      if (entry.path().extension() == ".json" && entry.is_regular_file()) files.push_back(entry.path());
    if (ec) throw BadInput(path.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw BadInput(path.string() + ": no manifest (*.json) in this folder");
    for (const auto& f : files) verify_document(sdk::read_json(f, sdk::JsonLimits::small_file()), f, options, report);
    return report;
  }
  if (!fs::exists(path, ec)) throw BadInput(path.string() + ": no such file or folder");
  const json document = sdk::read_json(path, sdk::JsonLimits::small_file());
  if (!options.library.empty() && is_index(document) && document.contains("adapters") &&
      document["adapters"].is_array() && document["adapters"].size() != 1)
    throw UsageError("registry verify: --library names the library of one manifest, and the index " + path.string() +
                     " lists " + std::to_string(document["adapters"].size()) + "; pass that adapter's manifest alone");
  verify_document(document, path, options, report);
  return report;
}

}  // namespace llm2hef::registry
