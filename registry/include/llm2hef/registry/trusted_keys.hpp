// The keys an index signature may be made with: those the user added
// (`registry keys add`, kept in trusted_key_dir() as <key_id>.pub) and those
// shipped with llm2hef (shipped_key_dir(), every *.pub in it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "llm2hef/registry/signing.hpp"

namespace llm2hef::registry {

struct TrustedKey {
  PublicKey key;
  std::string origin;  // "user" or "shipped"
};

// Every readable key, user keys first. A key file that does not read is a
// BadInput naming it: a broken trust store is not silently narrowed.
std::vector<TrustedKey> trusted_keys();
std::vector<PublicKey> trusted_public_keys();

// Copies a public key file into the user store (atomic). Returns the key.
// UsageError when a key with this id is already trusted.
PublicKey add_trusted_key(const std::filesystem::path& file);

// Removes a user key by id; UsageError when no user key has it (a shipped
// key cannot be removed this way: the message says so).
void remove_trusted_key(const std::string& key_id);

}  // namespace llm2hef::registry
