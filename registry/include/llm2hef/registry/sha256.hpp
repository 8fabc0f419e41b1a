// SHA-256 (FIPS 180-4), for the checksums in adapter manifests.
//
// Written here rather than taken from a crypto library: the dependency list is
// fixed (docs/DESIGN.md), and a manifest checksum needs nothing but the plain
// hash. It is checked against the FIPS test vectors in tests/unit.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace llm2hef::registry {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest; the object must not be updated afterwards.
  std::array<std::uint8_t, 32> finish();
  // finish() as 64 lowercase hex digits.
  std::string finish_hex();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;
  std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view data);

// Streams the file in blocks; throws BadInput naming the file when it cannot
// be read.
std::string sha256_file_hex(const std::filesystem::path& file);

}  // namespace llm2hef::registry
