// The HEF file header (hailo-contract.md section 10): big-endian, versions 0-3.
//
//   common   @0 magic u32 = 0x01484546, @4 version u32, @8 hef_proto_size u32
//   v0 (32)  @12 reserved u32, @16 md5[16]           proto = rest of the file
//   v1 (28)  @12 crc u32, @16 ccws_size u64, @24 reserved u32
//   v2 (44)  @12 xxh3_64bits u64, @20 ccws_size u64, @28/@36 reserved u64
//   v3 (56)  @12 xxh3_64bits u64, @20 ccws_size_with_padding u64,
//            @28 hef_padding_size u32, @32 additional_info_size u64,
//            @40 proto_xxh3_64bits u64, @48 reserved u64
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace llm2hef::core::hef {

inline constexpr uint32_t kHefMagic = 0x01484546;
inline constexpr size_t kHefCommonSize = 12;
inline constexpr size_t kHefMaxHeaderSize = 56;

// Header size of a version, 0 for an unknown one.
size_t hef_header_size(uint32_t version);

struct HefHeader {
  uint32_t version = 3;
  uint32_t proto_size = 0;
  std::array<uint8_t, 16> md5{};  // v0
  uint32_t crc = 0;               // v1
  uint64_t xxh3 = 0;              // v2, v3: XXH3-64 of everything after the header
  // v1/v2: ccws_size; v3: ccws_size_with_padding (padding included).
  uint64_t ccws_size = 0;
  uint32_t padding_size = 0;          // v3
  uint64_t additional_info_size = 0;  // v3
  uint64_t proto_xxh3 = 0;            // v3: XXH3-64 of the proto bytes, 0 = absent
  uint64_t reserved = 0;              // v3 @48, kept as read

  size_t header_size() const { return hef_header_size(version); }
  // Where resource offsets count from: header + proto (+ padding in v3); 0 in v0.
  uint64_t zero_point() const;
  // header + proto + the sections the header declares: what the file size must be.
  uint64_t declared_file_size() const;
};

// Parses the first bytes of a file of `file_size` bytes (`bytes` holds at least
// min(file_size, 56) of them). Validates the magic, the version and that the
// proto lies inside the file; throws BadInput naming `file` and the field.
// Whether the declared sections add up to the file size is left to the caller
// (the runtime checks it only in some cases; see HefFile).
HefHeader parse_hef_header(std::span<const uint8_t> bytes, uint64_t file_size, const std::string& file);

// The 56 big-endian bytes of a version 3 header.
std::string serialize_hef_header_v3(const HefHeader& h);

}  // namespace llm2hef::core::hef
