// `llm2hef registry verify`: is a published adapter what its manifest says?
//
// For each manifest, in this order (a failed gate stops the ones after it):
//   schema     the manifest passes the manifest schema
//   library    the .so exists and passes the host's safety rules (not
//              world-writable, owned by you or root). Where it is looked
//              for, first match wins: VerifyOptions::library when given;
//              library.file in the manifest's folder (an index's folder for
//              its entries); a relative library.url (an index entry's)
//              resolved against that folder. Nothing else: a manifest never
//              names a library by an absolute path or by the current folder.
//   sha256     the file's SHA-256 (and size, when given) match — checked
//              before anything is loaded: a tampered library is never run
//   abi        sdk_abi equals the host's ABI version; sdk_fingerprint, when
//              given, equals the host's build fingerprint
//   load       the library loads through the host's checked loader
//   identity   descriptor name and version equal the manifest's
//   claims     architectures and model_types equal what the library reports
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::registry {

struct VerifyCheck {
  std::string name;  // "schema", "library", "sha256", "abi", "load", "identity", "claims"
  bool passed = false;
  std::string detail;  // what was found, or what is wrong
};

struct ManifestVerdict {
  std::string source;   // manifest file, or "index.json#adapters[2]"
  std::string adapter;  // manifest name, when readable
  std::filesystem::path library;
  std::vector<VerifyCheck> checks;
  bool passed() const;
};

struct VerifyReport {
  std::vector<ManifestVerdict> manifests;
  bool passed() const;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

struct VerifyOptions {
  bool allow_unsafe = false;  // --allow-unsafe-adapters
  // --library FILE: the library of the one manifest checked, wherever it is
  // (a manifest written with `registry manifest LIB -o elsewhere/x.json`).
  std::filesystem::path library{};
};

// `path` is a manifest, an index, or a folder (every *.json in it, in name
// order). Throws BadInput when the path cannot be read or holds no manifest;
// everything wrong *with* a manifest is a failed check in the report.
// With options.library, `path` must hold exactly one manifest (UsageError).
VerifyReport verify_published(const std::filesystem::path& path, const VerifyOptions& options = {});

}  // namespace llm2hef::registry
