#include "llm2hef/registry/signing.hpp"

#include <sodium.h>

#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

using nlohmann::json;

constexpr const char* kPublicFormat = "llm2hef-public-key-1";
constexpr const char* kSecretFormat = "llm2hef-secret-key-1";
constexpr const char* kSignatureFormat = "llm2hef-signature-1";

void init_sodium() {
  static const int status = sodium_init();
  if (status < 0) throw InternalError("libsodium could not be initialised");
}

std::string hex(const std::uint8_t* data, std::size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// `count` bytes from lowercase hex, or BadInput naming origin and field.
std::vector<std::uint8_t> unhex(const json& doc, const char* field, std::size_t count, const std::string& origin) {
  if (!doc.contains(field) || !doc[field].is_string())
    throw BadInput(origin + ": field '" + field + "': missing or not a string");
  const std::string& text = doc[field].get_ref<const std::string&>();
  if (text.size() != count * 2)
    throw BadInput(origin + ": field '" + field + "': expected " + std::to_string(count * 2) + " hex digits, got " +
                   std::to_string(text.size()) + " characters");
  std::vector<std::uint8_t> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    const int hi = hex_digit(text[2 * i]), lo = hex_digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) throw BadInput(origin + ": field '" + field + "': not lowercase hex");
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return out;
}

void expect_string(const json& doc, const char* field, const char* value, const std::string& origin) {
  if (!doc.is_object()) throw BadInput(origin + ": expected a JSON object");
  if (!doc.contains(field) || doc[field] != value)
    throw BadInput(origin + ": field '" + field + "': expected \"" + value + "\", got " +
                   (doc.contains(field) ? doc[field].dump() : std::string("nothing")));
}

std::string comment_of(const json& doc) {
  return doc.contains("comment") && doc["comment"].is_string() ? doc["comment"].get<std::string>() : "";
}

// The id the file states must be the one its key gives.
void check_key_id(const json& doc, const std::string& actual, const std::string& origin) {
  if (!doc.contains("key_id") || doc["key_id"] != actual)
    throw BadInput(origin + ": field 'key_id': does not match the key (its id is " + actual + ")");
}

}  // namespace

std::string key_id_of(const std::array<std::uint8_t, 32>& public_key) {
  Sha256 h;
  h.update(public_key.data(), public_key.size());
  return h.finish_hex().substr(0, 16);
}

KeyPair generate_key_pair(const std::string& comment) {
  init_sodium();
  KeyPair pair;
  pair.secret.resize(crypto_sign_SECRETKEYBYTES);
  crypto_sign_keypair(pair.public_key.bytes.data(), pair.secret.data());
  pair.public_key.key_id = key_id_of(pair.public_key.bytes);
  pair.public_key.comment = comment;
  return pair;
}

json public_key_json(const PublicKey& key) {
  return {{"format", kPublicFormat},
          {"algorithm", "ed25519"},
          {"key_id", key.key_id},
          {"public_key", hex(key.bytes.data(), key.bytes.size())},
          {"comment", key.comment}};
}

json secret_key_json(const KeyPair& pair) {
  return {{"format", kSecretFormat},
          {"algorithm", "ed25519"},
          {"key_id", pair.public_key.key_id},
          {"secret_key", hex(pair.secret.data(), pair.secret.size())},
          {"comment", pair.public_key.comment}};
}

PublicKey read_public_key(const fs::path& file) {
  PublicKey key = public_key_from_json(sdk::read_json(file, sdk::JsonLimits::small_file()), file.string());
  key.file = file;
  return key;
}

PublicKey public_key_from_json(const json& doc, const std::string& origin) {
  expect_string(doc, "format", kPublicFormat, origin);
  expect_string(doc, "algorithm", "ed25519", origin);
  PublicKey key;
  const auto bytes = unhex(doc, "public_key", 32, origin);
  std::copy(bytes.begin(), bytes.end(), key.bytes.begin());
  key.key_id = key_id_of(key.bytes);
  check_key_id(doc, key.key_id, origin);
  key.comment = comment_of(doc);
  return key;
}

KeyPair read_secret_key(const fs::path& file) {
  KeyPair pair = secret_key_from_json(sdk::read_json(file, sdk::JsonLimits::small_file()), file.string());
  pair.public_key.file = file;
  return pair;
}

KeyPair secret_key_from_json(const json& doc, const std::string& origin) {
  init_sodium();
  expect_string(doc, "format", kSecretFormat, origin);
  expect_string(doc, "algorithm", "ed25519", origin);
  KeyPair pair;
  pair.secret = unhex(doc, "secret_key", crypto_sign_SECRETKEYBYTES, origin);
  if (crypto_sign_ed25519_sk_to_pk(pair.public_key.bytes.data(), pair.secret.data()) != 0)
    throw BadInput(origin + ": field 'secret_key': not an ed25519 secret key");
  pair.public_key.key_id = key_id_of(pair.public_key.bytes);
  check_key_id(doc, pair.public_key.key_id, origin);
  pair.public_key.comment = comment_of(doc);
  return pair;
}

json sign(std::string_view data, const KeyPair& key) {
  init_sodium();
  std::array<std::uint8_t, crypto_sign_BYTES> signature{};
  crypto_sign_detached(signature.data(), nullptr, reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                       key.secret.data());
  return {{"format", kSignatureFormat},
          {"algorithm", "ed25519"},
          {"key_id", key.public_key.key_id},
          {"signature", hex(signature.data(), signature.size())}};
}

const PublicKey& verify_signature(std::string_view data, const json& signature, const std::string& origin,
                                  const std::vector<PublicKey>& trusted) {
  init_sodium();
  expect_string(signature, "format", kSignatureFormat, origin);
  expect_string(signature, "algorithm", "ed25519", origin);
  if (!signature.contains("key_id") || !signature["key_id"].is_string())
    throw BadInput(origin + ": field 'key_id': missing or not a string");
  const auto bytes = unhex(signature, "signature", crypto_sign_BYTES, origin);
  const std::string key_id = signature["key_id"].get<std::string>();
  for (const PublicKey& key : trusted) {
    if (key.key_id != key_id) continue;
    if (crypto_sign_verify_detached(bytes.data(), reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                                    key.bytes.data()) != 0)
      throw Error(ExitCode::failure, origin + ": the signature does not verify with trusted key " + key_id +
                                         " (the index was changed after it was signed, or signed by another key)");
    return key;
  }
  std::string ids;
  for (const PublicKey& key : trusted) ids += (ids.empty() ? "" : ", ") + key.key_id;
  throw Error(ExitCode::failure, origin + ": field 'key_id': signed by key " + key_id +
                                     ", which is not trusted (trusted: " + (ids.empty() ? "none" : ids) +
                                     "; `llm2hef registry keys add FILE` trusts a key)");
}

}  // namespace llm2hef::registry
