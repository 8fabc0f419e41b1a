// SHA-256 (FIPS 180-4), for the checksums in adapter manifests and the
// hailo-ollama blob names.
//
// The hash itself is Nettle's (Debian nettle-dev, a maintained library that
// GnuTLS builds on): a checksum that decides whether native code gets loaded
// should come from code that many people review. This keeps the streaming
// interface the callers use; the FIPS test vectors stay in tests/unit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

struct sha256_ctx;  // Nettle's state, kept out of this header

namespace llm2hef::registry {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> finish();
  // finish() as 64 lowercase hex digits.
  std::string finish_hex();

 private:
  std::unique_ptr<sha256_ctx> state_;
};

std::string sha256_hex(std::string_view data);

// Streams the file in blocks; throws BadInput naming the file when it cannot
// be read.
std::string sha256_file_hex(const std::filesystem::path& file);

}  // namespace llm2hef::registry
