// libFuzzer target for what the registry client reads from the network and
// the trust store, in memory: a public key file, a secret key file, a
// detached signature, an index (its entries through the manifest schema and
// the index rules), and a JSON schema with an instance for the schema checker
// (registry/src/json_schema.cpp, which `registry verify` also uses).
//
// The input is up to six parts separated by kSeparator: public key, secret
// key, signature, index, schema, instance. An empty part is skipped. The
// index is parsed twice: with the fuzzed signature (the signature checks),
// and signed here with a fixed key so that the entries are reached too (a
// fuzzer cannot forge ed25519). Every input must either be accepted or be
// refused with llm2hef::Error (BadInput, failure...) or, for a schema,
// std::invalid_argument; anything else (raw nlohmann text, a sanitizer
// report, a timeout) is a bug.
#include <sodium.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "llm2hef/registry/index_client.hpp"
#include "llm2hef/registry/json_schema.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/signing.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

using namespace llm2hef;
using nlohmann::json;

namespace {

constexpr std::string_view kSeparator = "\n@@@@\n";
constexpr size_t kParts = 6;

std::array<std::string, kParts> split(std::string_view in) {
  std::array<std::string, kParts> parts{};
  for (size_t i = 0; i < kParts; ++i) {
    const size_t at = i + 1 < kParts ? in.find(kSeparator) : std::string_view::npos;
    parts[i] = std::string(in.substr(0, at));
    if (at == std::string_view::npos) break;
    in.remove_prefix(at + kSeparator.size());
  }
  return parts;
}

// A fixed key pair (from a constant seed), trusted for the index parse.
const registry::KeyPair& fuzz_key() {
  static const registry::KeyPair pair = [] {
    if (sodium_init() < 0) __builtin_trap();
    registry::KeyPair p;
    p.secret.resize(crypto_sign_SECRETKEYBYTES);
    std::array<unsigned char, crypto_sign_SEEDBYTES> seed{};
    seed.fill(7);
    crypto_sign_seed_keypair(p.public_key.bytes.data(), p.secret.data(), seed.data());
    p.public_key.key_id = registry::key_id_of(p.public_key.bytes);
    return p;
  }();
  return pair;
}

template <class F>
void refused_cleanly(F&& step) {
  try {
    step();
  } catch (const Error&) {
    // BadInput, Error(failure), Unsupported: a refusal with a message.
  }
}

json parsed(const std::string& text, const std::string& origin) {
  return sdk::parse_json(text, origin, sdk::JsonLimits::small_file());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = split(std::string_view(reinterpret_cast<const char*>(data), size));
  const registry::IndexSource source{"https://example.org/reg/index.json", "https://example.org/reg/index.json.sig"};
  const std::vector<registry::PublicKey> trusted{fuzz_key().public_key};

  if (!parts[0].empty())
    refused_cleanly([&] { (void)registry::public_key_from_json(parsed(parts[0], "k.pub"), "k.pub"); });
  if (!parts[1].empty())
    refused_cleanly([&] { (void)registry::secret_key_from_json(parsed(parts[1], "k.key"), "k.key"); });
  if (!parts[2].empty() || !parts[3].empty())
    refused_cleanly([&] { (void)registry::parse_signed_index(source, parts[3], parts[2], trusted); });
  if (!parts[3].empty()) {
    const std::string signature = registry::sign(parts[3], fuzz_key()).dump();
    refused_cleanly([&] {
      const registry::SignedIndex index = registry::parse_signed_index(source, parts[3], signature, trusted);
      for (const auto& e : index.entries) (void)registry::incompatibility(e.manifest);
    });
  }
  if (!parts[4].empty() || !parts[5].empty()) {
    refused_cleanly([&] {
      const json instance = parsed(parts[5].empty() ? "{}" : parts[5], "instance.json");
      (void)registry::describe(registry::manifest_schema().validate(instance));
      // A fuzzed "pattern" could backtrack for minutes on a 4 KB string
      // (std::regex): schemas with patterns come only from llm2hef itself,
      // so those are left to the compiled-in one above.
      if (parts[4].empty() || parts[4].find("pattern") != std::string::npos) return;
      try {
        const registry::JsonSchema schema(parsed(parts[4], "schema.json"));
        (void)registry::describe(schema.validate(instance));
      } catch (const std::invalid_argument&) {
        // an unsupported or malformed schema, refused as such
      }
    });
  }
  return 0;
}
