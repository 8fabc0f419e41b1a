#include "llm2hef/registry/index_client.hpp"

#include <map>
#include <set>

#include "llm2hef/registry/download.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

using nlohmann::json;

// "1.2.3-rc.1" -> {1, 2, 3}, "rc.1"
struct Version {
  std::vector<unsigned long long> numbers;
  std::string pre;
};

Version parse_version(const std::string& text) {
  Version v;
  std::string core = text;
  if (const auto plus = core.find('+'); plus != std::string::npos) core.resize(plus);
  if (const auto dash = core.find('-'); dash != std::string::npos) {
    v.pre = core.substr(dash + 1);
    core.resize(dash);
  }
  std::size_t start = 0;
  while (start <= core.size()) {
    std::size_t end = core.find('.', start);
    if (end == std::string::npos) end = core.size();
    unsigned long long n = 0;
    for (std::size_t i = start; i < end; ++i)
      if (core[i] >= '0' && core[i] <= '9' && n < 1000000000000ULL) n = n * 10 + static_cast<unsigned>(core[i] - '0');
    v.numbers.push_back(n);
    start = end + 1;
  }
  return v;
}

}  // namespace

int compare_versions(const std::string& a, const std::string& b) {
  const Version x = parse_version(a), y = parse_version(b);
  if (x.numbers != y.numbers) return x.numbers < y.numbers ? -1 : 1;
  if (x.pre == y.pre) return 0;
  if (x.pre.empty()) return 1;  // a release sorts after its pre-releases
  if (y.pre.empty()) return -1;
  return x.pre < y.pre ? -1 : 1;
}

IndexSource index_source(const std::string& dir_or_url) {
  if (dir_or_url.empty()) throw UsageError("--index: empty");
  std::string url;
  if (!url_scheme(dir_or_url).empty()) {
    url = dir_or_url;
    if (!url.ends_with(".json")) url += url.ends_with("/") ? "index.json" : "/index.json";
  } else {
    fs::path p = fs::absolute(dir_or_url);
    std::error_code ec;
    if (!fs::exists(p, ec)) throw BadInput(dir_or_url + ": --index: no such folder or index file");
    if (fs::is_directory(p, ec)) p /= "index.json";
    url = file_url(p);
  }
  return {url, url + ".sig"};
}

AdapterManifest check_index_entry(const json& entry, const std::string& origin) {
  AdapterManifest m = parse_adapter_manifest(entry, origin);
  if (!m.library.url) throw BadInput(origin + ": field 'library.url': required in an index entry");
  if (!m.library.size) throw BadInput(origin + ": field 'library.size': required in an index entry");
  if (!m.sdk_fingerprint)
    throw BadInput(origin + ": field 'sdk_fingerprint': required in an index entry (which build this .so is)");
  const std::string& file = m.library.file;
  if (file == "." || file == ".." || file.find('/') != std::string::npos)
    throw BadInput(origin + ": field 'library.file': '" + file + "' is not a plain file name");
  const std::string& url = *m.library.url;
  // libcurl stops at a NUL: the URL checked and the URL fetched would differ.
  for (unsigned char c : url)
    if (c < 0x20 || c == 0x7F)
      throw BadInput(origin + ": field 'library.url': has a control character (" + std::to_string(c) + "); refused");
  const std::string scheme = url_scheme(url);
  if (scheme.empty())
    resolve_relative_url("file:///index.json", url, origin + ": field 'library.url'");  // checks only
  else if (scheme != "http" && scheme != "https" && scheme != "file")
    throw BadInput(origin + ": field 'library.url': scheme '" + scheme + "' (only http, https, file)");
  return m;
}

void check_index_unique(const std::vector<AdapterManifest>& entries, const std::vector<std::string>& origins) {
  std::map<std::string, std::size_t> versions;
  std::map<std::string, std::pair<std::string, std::size_t>> files;  // library file -> adapter name, entry
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].name;
    const std::string key = name + "@" + entries[i].version;
    if (auto [it, fresh] = versions.emplace(key, i); !fresh)
      throw BadInput(origins[i] + ": " + key + " is also published by " + origins[it->second] +
                     " (one entry per name@version)");
    const std::string& file = entries[i].library.file;
    if (auto [it, fresh] = files.emplace(file, std::make_pair(name, i)); !fresh && it->second.first != name)
      throw BadInput(origins[i] + ": field 'library.file': " + file + " is also the library of adapter '" +
                     it->second.first + "' (" + origins[it->second.second] +
                     "); installed adapters share one folder, so file names must differ");
  }
}

std::string host_build_requirement() {
  return "SDK ABI " + std::to_string(LLM2HEF_ADAPTER_ABI_VERSION) + ", fingerprint '" + host_fingerprint() + "'";
}

std::string incompatibility(const AdapterManifest& entry) {
  const int64_t abi = entry.sdk_abi;
  if (abi != LLM2HEF_ADAPTER_ABI_VERSION)
    return "built for SDK ABI " + std::to_string(abi) + "; this llm2hef needs " + host_build_requirement();
  const std::string fingerprint = entry.sdk_fingerprint.value_or("");
  if (fingerprint != host_fingerprint())
    return "built with fingerprint '" + fingerprint + "'; this llm2hef needs " + host_build_requirement();
  return {};
}

SignedIndex load_signed_index(const IndexSource& source, const std::vector<PublicKey>& trusted) {
  DownloadLimits index_limits;
  index_limits.max_bytes = kMaxIndexBytes;
  DownloadLimits signature_limits;
  signature_limits.max_bytes = kMaxSignatureBytes;
  const std::string text = download_to_string(source.index_url, index_limits);
  std::string signature_text;
  try {
    signature_text = download_to_string(source.signature_url, signature_limits);
  } catch (const BadInput& e) {
    throw Error(ExitCode::failure, std::string(e.what()) + " (an index without its signature is not used)");
  }
  // The signature covers the exact bytes; a byte order mark is not JSON
  // (RFC 8259 8.1) and would be taken for part of the index by one reader
  // and skipped by another.
  auto refuse_bom = [](const std::string& document, const std::string& url) {
    if (document.starts_with("\xEF\xBB\xBF"))
      throw BadInput(url + ": starts with a UTF-8 byte order mark; an index and its signature are JSON without one");
  };
  refuse_bom(signature_text, source.signature_url);
  refuse_bom(text, source.index_url);
  return parse_signed_index(source, text, signature_text, trusted);
}

SignedIndex parse_signed_index(const IndexSource& source, const std::string& text, const std::string& signature_text,
                               const std::vector<PublicKey>& trusted) {
  SignedIndex index;
  index.source = source;
  // The signature first: nothing of an unverified index is interpreted.
  const json signature = sdk::parse_json(signature_text, source.signature_url, sdk::JsonLimits::small_file());
  index.signer = verify_signature(text, signature, source.signature_url, trusted);

  const json document = sdk::parse_json(text, source.index_url, sdk::JsonLimits::small_file());
  if (!document.is_object() || document.value("index_version", json()) != kIndexVersion)
    throw BadInput(source.index_url + ": field 'index_version': this llm2hef reads index version " +
                   std::to_string(kIndexVersion));
  if (!document.contains("adapters") || !document["adapters"].is_array())
    throw BadInput(source.index_url + ": field 'adapters': expected a list of entries");
  std::vector<AdapterManifest> manifests;
  std::vector<std::string> origins;
  for (std::size_t i = 0; i < document["adapters"].size(); ++i) {
    IndexEntry e;
    e.origin = source.index_url + "#adapters[" + std::to_string(i) + "]";
    e.manifest = check_index_entry(document["adapters"][i], e.origin);
    const std::string& url = *e.manifest.library.url;
    e.library_url =
        url_scheme(url).empty() ? resolve_relative_url(source.index_url, url, e.origin + ": field 'library.url'") : url;
    manifests.push_back(e.manifest);
    origins.push_back(e.origin);
    index.entries.push_back(std::move(e));
  }
  check_index_unique(manifests, origins);
  return index;
}

}  // namespace llm2hef::registry
