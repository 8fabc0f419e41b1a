// Ed25519 signatures over index files (libsodium's crypto_sign_detached).
//
// Three small JSON documents, each with a "format" field so that one cannot
// be taken for another:
//   public key  {"format": "llm2hef-public-key-1", "algorithm": "ed25519",
//                "key_id": "<16 hex>", "public_key": "<64 hex>", "comment": "..."}
//   secret key  {"format": "llm2hef-secret-key-1", "algorithm": "ed25519",
//                "key_id": ..., "secret_key": "<128 hex>", "comment": ...}   (mode 0600)
//   signature   {"format": "llm2hef-signature-1", "algorithm": "ed25519",
//                "key_id": ..., "signature": "<128 hex>"}
// The key id is the first 8 bytes of the public key's SHA-256, in hex; it is
// recomputed on every read, so a file cannot claim another key's id. A
// signature covers the exact bytes of the signed file.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace llm2hef::registry {

struct PublicKey {
  std::string key_id;
  std::array<std::uint8_t, 32> bytes{};
  std::string comment;
  std::filesystem::path file;  // where it was read from, when it was
};

struct KeyPair {
  PublicKey public_key;
  std::vector<std::uint8_t> secret;  // 64 bytes (seed + public key), as libsodium keeps it
};

KeyPair generate_key_pair(const std::string& comment);

nlohmann::json public_key_json(const PublicKey& key);
nlohmann::json secret_key_json(const KeyPair& pair);

// Read and check a key file; BadInput naming the file and field otherwise.
PublicKey read_public_key(const std::filesystem::path& file);
KeyPair read_secret_key(const std::filesystem::path& file);
// The same checks on a parsed document; `origin` names it in messages. The
// key's `file` is left empty.
PublicKey public_key_from_json(const nlohmann::json& doc, const std::string& origin);
KeyPair secret_key_from_json(const nlohmann::json& doc, const std::string& origin);

// The signature document of `data`.
nlohmann::json sign(std::string_view data, const KeyPair& key);

// Checks `signature` (a signature document, from `origin`) over `data`
// against `trusted`. Returns the key that verified it; throws
// Error(ExitCode::failure) when the document names no trusted key or does not
// verify, BadInput when it is malformed.
const PublicKey& verify_signature(std::string_view data, const nlohmann::json& signature, const std::string& origin,
                                  const std::vector<PublicKey>& trusted);

std::string key_id_of(const std::array<std::uint8_t, 32>& public_key);

}  // namespace llm2hef::registry
