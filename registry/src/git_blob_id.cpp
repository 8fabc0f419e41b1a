#include "llm2hef/registry/git_blob_id.hpp"

#include <nettle/sha1.h>

#include <array>

namespace llm2hef::registry {

GitBlobId::GitBlobId(std::uint64_t size) : state_(std::make_unique<sha1_ctx>()) {
  sha1_init(state_.get());
  const std::string header = "blob " + std::to_string(size);
  // The header ends with its NUL byte, which git hashes too.
  sha1_update(state_.get(), header.size() + 1, reinterpret_cast<const std::uint8_t*>(header.c_str()));
}
GitBlobId::~GitBlobId() = default;
GitBlobId::GitBlobId(GitBlobId&&) noexcept = default;
GitBlobId& GitBlobId::operator=(GitBlobId&&) noexcept = default;

void GitBlobId::update(const void* data, std::size_t size) {
  sha1_update(state_.get(), size, static_cast<const std::uint8_t*>(data));
}

std::string GitBlobId::finish_hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::array<std::uint8_t, SHA1_DIGEST_SIZE> digest{};
  sha1_digest(state_.get(), digest.size(), digest.data());
  std::string out;
  for (std::uint8_t byte : digest) {
    out.push_back(kHex[byte >> 4]);
    out.push_back(kHex[byte & 15]);
  }
  return out;
}

}  // namespace llm2hef::registry
