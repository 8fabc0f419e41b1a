// Reading a signed adapter index (docs/registry.md).
//
// An index is index.json, {"index_version": 1, "adapters": [entry...]}, next
// to its detached signature index.json.sig (signing.hpp). Each entry is an
// adapter manifest (registry/schema/adapter-manifest.schema.json) that also
// says where the library is fetched from (library.url: an http, https or file
// URL, or a path relative to the index), its size and the SDK fingerprint it
// was built for. The signature is checked against the trusted keys before
// anything in the index is read; then every entry is checked, and the index
// is refused whole when one is wrong (a signed index with a bad entry is a
// publishing mistake to fix, not something to half-use).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/signing.hpp"

namespace llm2hef::registry {

inline constexpr std::uint64_t kMaxIndexBytes = 16u << 20;
inline constexpr std::uint64_t kMaxSignatureBytes = 64u << 10;
// The largest adapter library accepted (first-party ones are 2-6 MB).
inline constexpr std::uint64_t kMaxLibraryBytes = 256u << 20;

struct IndexSource {
  std::string index_url;      // .../index.json
  std::string signature_url;  // .../index.json.sig
};

// DIR (holding index.json), a local index file, or a URL (ending in .json, or
// a folder URL to which /index.json is added).
IndexSource index_source(const std::string& dir_or_url);

struct IndexEntry {
  AdapterManifest manifest;  // library.url as the index gives it (maybe relative)
  std::string library_url;   // absolute
  std::string origin;        // "URL#adapters[2]", for messages
  const std::string& name() const { return manifest.name; }
  const std::string& version() const { return manifest.version; }
};

struct SignedIndex {
  IndexSource source;
  PublicKey signer;
  std::vector<IndexEntry> entries;  // in index order
};

// Downloads, verifies the signature against `trusted`, and checks every
// entry. Error(failure) for a signature that does not verify or an untrusted
// key; BadInput for anything unreadable or malformed.
SignedIndex load_signed_index(const IndexSource& source, const std::vector<PublicKey>& trusted);
// The same on texts already fetched (what load_signed_index does after the
// downloads; the fuzz target calls it directly).
SignedIndex parse_signed_index(const IndexSource& source, const std::string& index_text,
                               const std::string& signature_text, const std::vector<PublicKey>& trusted);

// The entry checks: the manifest schema, then library.url, library.size and
// sdk_fingerprint present (an index must say where the .so is and what it
// needs), and a relative url without '.'/'..' segments. BadInput naming
// `origin` and the field.
// Returns the entry as the type.
AdapterManifest check_index_entry(const nlohmann::json& entry, const std::string& origin);

// Refuses two entries with one name@version, and two adapters naming the
// same library file (installed adapters share one folder). `origins` are
// the entries' names for messages.
void check_index_unique(const std::vector<AdapterManifest>& entries, const std::vector<std::string>& origins);

// Why this llm2hef cannot use the entry's build (ABI or fingerprint), or empty.
std::string incompatibility(const AdapterManifest& entry);

// What this llm2hef needs, for messages: "SDK ABI 1, fingerprint '...'".
std::string host_build_requirement();

// Semantic-version order (numeric major.minor.patch; a pre-release sorts
// before its release). Negative, zero or positive like strcmp.
int compare_versions(const std::string& a, const std::string& b);

}  // namespace llm2hef::registry
