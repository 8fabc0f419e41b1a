#include "llm2hef/registry/installer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "llm2hef/registry/claim_sets.hpp"
#include "llm2hef/registry/claims_probe.hpp"
#include "llm2hef/registry/download.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/registry/temp_file.hpp"
#include "llm2hef/registry/user_dirs.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

using nlohmann::json;

constexpr const char* kManifestSuffix = ".adapter.json";

Error check_failed(const std::string& message) { return Error(ExitCode::failure, message); }

// What differs between the claims of the entry and those of the library.
std::string claims_difference(const char* what, const std::vector<std::string>& listed,
                              const std::vector<std::string>& reported) {
  const ClaimDifference d = claim_difference(listed, reported);
  std::string out;
  if (!d.only_listed.empty())
    out += std::string("field '") + what + "': the entry claims " + joined(d.only_listed) +
           ", which the library does not report";
  if (!d.only_reported.empty())
    out += std::string(out.empty() ? "" : "; ") + "field '" + what + "': the library reports " +
           joined(d.only_reported) + ", which the entry does not list";
  return out;
}

void refuse_if_taken(const IndexEntry& entry, const fs::path& dir, const plugins::AdapterHost& host) {
  const std::string name = entry.name();
  for (const auto& installed : installed_adapters(dir)) {
    if (installed.name() != name) continue;
    if (installed.version() == entry.version())
      throw UsageError(name + "@" + entry.version() + " is already installed (" + installed.library.string() + ")");
    throw UsageError(name + "@" + installed.version() + " is installed (" + installed.library.string() +
                     "); `llm2hef registry uninstall " + name + "` first to install " + entry.version());
  }
  const fs::path user_dir = fs::absolute(dir).lexically_normal();
  for (const auto& a : host.adapters()) {
    if (a.name() != name) continue;
    if (fs::absolute(a.path()).parent_path().lexically_normal() == user_dir) continue;
    throw UsageError("adapter '" + name + "' is already provided by " + a.path().string() +
                     ", which is searched before " + dir.string() + ": an installed copy would never be used");
  }
  const fs::path library = dir / entry.manifest.library.file;
  std::error_code ec;
  if (fs::exists(fs::symlink_status(library, ec)))
    throw UsageError(library.string() + " already exists (field 'library.file' of " + entry.origin +
                     " names it); not replaced");
}

}  // namespace

std::vector<InstalledAdapter> installed_adapters(const fs::path& dir) {
  std::vector<InstalledAdapter> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.ends_with(kManifestSuffix) || file.front() == '.') continue;
    InstalledAdapter a;
    a.manifest_file = it->path();
    a.manifest = parse_adapter_manifest(sdk::read_json(a.manifest_file, sdk::JsonLimits::small_file()),
                                        a.manifest_file.string());
    a.library = dir / a.manifest.library.file;
    out.push_back(std::move(a));
  }
  if (ec) throw BadInput(dir.string() + ": cannot list the installed adapters: " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name() < b.name(); });
  return out;
}

std::map<std::string, std::string> installed_versions() {
  std::map<std::string, std::string> out;
  fs::path dir;
  try {
    dir = installed_adapter_dir();
  } catch (const BadInput&) {
    return out;
  }
  for (const auto& a : installed_adapters(dir)) out[a.name()] = a.version();
  return out;
}

InstalledState installed_state(const InstalledAdapter& adapter) {
  std::error_code ec;
  if (!fs::is_regular_file(adapter.library, ec)) return InstalledState::missing;
  if (sha256_file_hex(adapter.library) != adapter.manifest.library.sha256) return InstalledState::modified;
  return InstalledState::ok;
}

const char* to_string(InstalledState state) {
  switch (state) {
    case InstalledState::ok: return "ok";
    case InstalledState::missing: return "missing";
    case InstalledState::modified: return "modified";
  }
  return "?";
}

const IndexEntry& select_entry(const SignedIndex& index, const std::string& spec) {
  const auto at = spec.find('@');
  const std::string name = spec.substr(0, at);
  const std::optional<std::string> version =
      at == std::string::npos ? std::nullopt : std::optional(spec.substr(at + 1));
  std::vector<const IndexEntry*> candidates;
  std::set<std::string> names;
  for (const auto& e : index.entries) {
    names.insert(e.name());
    if (e.name() == name) candidates.push_back(&e);
  }
  if (candidates.empty())
    throw UsageError("no adapter '" + name + "' in " + index.source.index_url +
                     " (it lists: " + (names.empty() ? std::string("nothing") : joined(names)) + ")");
  std::sort(candidates.begin(), candidates.end(),
            [](const IndexEntry* a, const IndexEntry* b) { return compare_versions(a->version(), b->version()) > 0; });
  if (version) {
    std::set<std::string> versions;
    for (const IndexEntry* e : candidates) {
      if (e->version() == *version) return *e;
      versions.insert(e->version());
    }
    throw UsageError("no version " + *version + " of '" + name + "' in " + index.source.index_url +
                     " (versions: " + joined(versions) + ")");
  }
  for (const IndexEntry* e : candidates)
    if (incompatibility(e->manifest).empty()) return *e;
  return *candidates.front();
}

InstalledAdapter install_adapter(const IndexEntry& entry, const fs::path& dir, const plugins::AdapterHost& host,
                                 const InstallOptions& options) {
  const std::string id = entry.name() + "@" + entry.version();
  // 1. The build: an adapter built for another SDK never gets downloaded.
  if (const std::string why = incompatibility(entry.manifest); !why.empty())
    throw check_failed(entry.origin + ": " + id + " is " + why +
                       " (a build of this adapter against this llm2hef's SDK would fit; ask its maintainer)");
  // 2. Nothing in the way.
  refuse_if_taken(entry, dir, host);

  const ManifestLibrary& library_field = entry.manifest.library;
  const std::uint64_t size = library_field.size.value();  // check_index_entry requires it
  if (size > kMaxLibraryBytes)
    throw BadInput(entry.origin + ": field 'library.size': " + std::to_string(size) + " bytes is over the limit of " +
                   std::to_string(kMaxLibraryBytes));
  std::error_code ec;
  // Every folder this install created goes again if it fails (when empty),
  // not only the last: a failed first install leaves no empty llm2hef/.
  CreatedFolders folders(create_folders(dir, "the adapter folder"));

  // 3. Download; size and SHA-256 before anything loads it.
  TempFile so(dir, entry.name());
  DownloadLimits limits;
  limits.max_bytes = size + 1;  // one byte more tells "too long" from "exactly right"
  std::uint64_t received = 0;
  try {
    received = download_to_fd(entry.library_url, so.fd(), limits);
  } catch (const BadInput& e) {
    if (std::string(e.what()).find("larger than the limit") == std::string::npos) throw;
    throw check_failed(entry.origin + ": field 'library.size': the entry says " + std::to_string(size) + " bytes, " +
                       entry.library_url + " sent more; not installed");
  }
  so.sync_and_close();
  if (received != size)
    throw check_failed(entry.origin + ": field 'library.size': the entry says " + std::to_string(size) + " bytes, " +
                       entry.library_url + " gave " + std::to_string(received) +
                       (received < size ? " (truncated)" : "") + "; not loaded, not installed");
  const std::string& expected = library_field.sha256;
  const std::string actual = sha256_file_hex(so.path());
  if (actual != expected)
    throw check_failed(entry.origin + ": field 'library.sha256': checksum mismatch: the entry says " + expected + ", " +
                       entry.library_url + " has " + actual + "; not loaded, not installed");

  // 4. Its claims, from a child process.
  if (!options.allow_unsafe)
    if (const std::string why = plugins::unsafe_file_reason(so.path()); !why.empty())
      throw BadInput(dir.string() + ": " + why);
  const ProbedClaims claims = probe_claims(so.path());
  if (!claims.loaded) throw check_failed(entry.origin + ": " + id + " does not load: " + claims.error);
  std::string wrong;
  if (claims.name != entry.name()) wrong = "field 'name': the library is adapter '" + claims.name + "'";
  if (claims.version != entry.version())
    wrong += std::string(wrong.empty() ? "" : "; ") + "field 'version': the library is version " + claims.version;
  for (const std::string& d :
       {claims_difference("architectures", entry.manifest.architectures, claims.architectures),
        claims_difference("model_types", entry.manifest.listed_model_types(), claims.model_types)})
    if (!d.empty()) wrong += (wrong.empty() ? "" : "; ") + d;
  if (!wrong.empty()) throw check_failed(entry.origin + ": " + wrong + "; not installed");

  // 5. Into place: the library, then its manifest.
  InstalledAdapter installed;
  installed.manifest = entry.manifest;
  installed.manifest.library.url = entry.library_url;
  installed.library = dir / library_field.file;
  installed.manifest_file = dir / (entry.name() + kManifestSuffix);
  TempFile manifest(dir, entry.name() + "-manifest");
  manifest.write_all(adapter_manifest_json(installed.manifest).dump(2) + "\n");
  manifest.sync_and_close();
  so.link_to(installed.library);
  try {
    manifest.link_to(installed.manifest_file);
  } catch (...) {
    fs::remove(installed.library, ec);
    throw;
  }
  sync_folder(dir);
  folders.keep();
  return installed;
}

InstalledAdapter uninstall_adapter(const std::string& name, const std::optional<std::string>& version,
                                   const fs::path& dir) {
  const auto all = installed_adapters(dir);
  std::set<std::string> names;
  for (const auto& a : all) {
    names.insert(a.name() + "@" + a.version());
    if (a.name() != name) continue;
    if (version && *version != a.version())
      throw UsageError(name + "@" + *version + " is not installed (" + name + "@" + a.version() + " is)");
    std::error_code ec;
    fs::remove(a.library, ec);
    if (ec) throw BadInput(a.library.string() + ": cannot remove: " + ec.message());
    fs::remove(a.manifest_file, ec);
    if (ec) throw BadInput(a.manifest_file.string() + ": cannot remove: " + ec.message());
    sync_folder(dir);
    return a;
  }
  throw UsageError("adapter '" + name + "' is not installed in " + dir.string() +
                   " (installed: " + (names.empty() ? std::string("none") : joined(names)) + ")");
}

}  // namespace llm2hef::registry
