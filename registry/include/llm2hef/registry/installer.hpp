// Installing adapters from a signed index into the user's adapter folder
// (plugins::user_adapter_dir(), searched by the host after the built-in
// folders), listing and removing them.
//
// The folder holds, per installed adapter, its library (the entry's
// library.file) and its manifest <name>.adapter.json (the index entry, with
// library.url made absolute), so `llm2hef registry verify FOLDER` re-checks
// everything installed. Install order, each step a gate:
//   1. the build fits this llm2hef (SDK ABI and fingerprint), else refused
//      naming the build that would fit;
//   2. nothing of that name is installed, and no built-in or --adapter-path
//      adapter has the name (it would shadow the installed one);
//   3. download into a hidden temporary file in the folder, at most
//      library.size + 1 bytes; size, then SHA-256 checked before anything
//      loads it;
//   4. its claims (name, version, architectures, model_types) read in a
//      child process (claims_probe.hpp) and compared with the entry;
//   5. hard-linked to its final name (never replacing a file), then the
//      manifest the same way. A failure at any step leaves the folder as it
//      was.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/registry/index_client.hpp"

namespace llm2hef::registry {

struct InstalledAdapter {
  AdapterManifest manifest;  // library.url absolute: where it was installed from
  std::filesystem::path manifest_file, library;
  const std::string& name() const { return manifest.name; }
  const std::string& version() const { return manifest.version; }
};

// Every <name>.adapter.json in `dir` (none when it does not exist), sorted by
// name. BadInput naming a manifest that does not read or fails the schema.
std::vector<InstalledAdapter> installed_adapters(const std::filesystem::path& dir);

// name -> version of every adapter installed in the user's folder
// (installed_adapter_dir()); empty when nothing is installed or no user folder
// can be named (no HOME): a search still works then.
std::map<std::string, std::string> installed_versions();

// Whether an installed library is still what was installed: there, and with
// the SHA-256 its manifest records (`registry list` shows the state).
enum class InstalledState { ok, missing, modified };
InstalledState installed_state(const InstalledAdapter& adapter);
const char* to_string(InstalledState state);  // "ok", "missing", "modified"

// NAME or NAME@VERSION -> the entry to install: the version asked for, or the
// newest version whose build fits this llm2hef (the newest one when none
// does, so that install refuses it saying why). UsageError when the index has
// no such name or version.
const IndexEntry& select_entry(const SignedIndex& index, const std::string& spec);

struct InstallOptions {
  bool allow_unsafe = false;  // --allow-unsafe-adapters: skip the folder safety rules
};

// Steps 1-5 above. Error(failure) for a check that fails (build, size,
// SHA-256, load, claims), UsageError for a name already installed or
// provided, BadInput for a failed download. `host` is the host as the CLI
// discovered it (to find names provided elsewhere).
InstalledAdapter install_adapter(const IndexEntry& entry, const std::filesystem::path& dir,
                                 const plugins::AdapterHost& host, const InstallOptions& options = {});

// Removes an installed adapter (library, then manifest). UsageError when it
// is not installed, or installed in another version than `version`.
InstalledAdapter uninstall_adapter(const std::string& name, const std::optional<std::string>& version,
                                   const std::filesystem::path& dir);

}  // namespace llm2hef::registry
