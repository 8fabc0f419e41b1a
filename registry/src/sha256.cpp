#include "llm2hef/registry/sha256.hpp"

#include <nettle/sha2.h>

#include <fstream>
#include <vector>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

static_assert(SHA256_DIGEST_SIZE == 32);

Sha256::Sha256() : state_(std::make_unique<sha256_ctx>()) { sha256_init(state_.get()); }
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, std::size_t size) {
  // Nettle takes the length as size_t and does its own block buffering.
  sha256_update(state_.get(), size, static_cast<const std::uint8_t*>(data));
}

std::array<std::uint8_t, 32> Sha256::finish() {
  std::array<std::uint8_t, 32> digest{};
  sha256_digest(state_.get(), digest.size(), digest.data());
  return digest;
}

std::string Sha256::finish_hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::uint8_t byte : finish()) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.finish_hex();
}

std::string sha256_file_hex(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw BadInput(file.string() + ": cannot open for reading");
  Sha256 h;
  std::vector<char> block(1 << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const std::streamsize got = in.gcount();
    if (got > 0) h.update(block.data(), static_cast<std::size_t>(got));
  }
  if (in.bad()) throw BadInput(file.string() + ": read error");
  return h.finish_hex();
}

}  // namespace llm2hef::registry
