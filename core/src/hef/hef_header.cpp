#include "llm2hef/core/hef/hef_header.hpp"

#include <sstream>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace {

uint64_t be(std::span<const uint8_t> b, size_t at, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | b[at + i];
  return v;
}

void put_be(std::string& out, uint64_t v, size_t n) {
  for (size_t i = n; i-- > 0;) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

}  // namespace

size_t hef_header_size(uint32_t version) {
  switch (version) {
    case 0: return 32;
    case 1: return 28;
    case 2: return 44;
    case 3: return 56;
    default: return 0;
  }
}

uint64_t HefHeader::zero_point() const {
  if (version == 0) return 0;
  return header_size() + proto_size + (version == 3 ? padding_size : 0);
}

uint64_t HefHeader::declared_file_size() const {
  const uint64_t base = header_size() + static_cast<uint64_t>(proto_size);
  if (version == 0) return base;
  if (version == 3) {
    // Sums of untrusted u64s: saturate instead of wrapping.
    uint64_t total = 0;
    if (__builtin_add_overflow(base, ccws_size, &total) || __builtin_add_overflow(total, additional_info_size, &total))
      return UINT64_MAX;
    return total;
  }
  uint64_t total = 0;
  if (__builtin_add_overflow(base, ccws_size, &total)) return UINT64_MAX;
  return total;
}

HefHeader parse_hef_header(std::span<const uint8_t> b, uint64_t file_size, const std::string& file) {
  if (file_size < kHefCommonSize || b.size() < kHefCommonSize)
    throw BadInput(file + ": " + std::to_string(file_size) + " bytes is too short for a HEF header (at least " +
                   std::to_string(kHefCommonSize) + ")");
  const auto magic = static_cast<uint32_t>(be(b, 0, 4));
  if (magic != kHefMagic)
    throw BadInput(file + ": header field magic is " + hex(magic) + ", expected " + hex(kHefMagic) +
                   " (bytes 01 'H' 'E' 'F'); not a HEF file");
  HefHeader h;
  h.version = static_cast<uint32_t>(be(b, 4, 4));
  const size_t hs = hef_header_size(h.version);
  if (hs == 0)
    throw BadInput(file + ": header field version is " + std::to_string(h.version) + "; versions 0 to 3 are known");
  if (file_size < hs || b.size() < hs)
    throw BadInput(file + ": " + std::to_string(file_size) + " bytes is too short for a version " +
                   std::to_string(h.version) + " header (" + std::to_string(hs) + " bytes)");
  h.proto_size = static_cast<uint32_t>(be(b, 8, 4));
  switch (h.version) {
    case 0:
      for (size_t i = 0; i < 16; ++i) h.md5[i] = b[16 + i];
      break;
    case 1:
      h.crc = static_cast<uint32_t>(be(b, 12, 4));
      h.ccws_size = be(b, 16, 8);
      break;
    case 2:
      h.xxh3 = be(b, 12, 8);
      h.ccws_size = be(b, 20, 8);
      break;
    case 3:
      h.xxh3 = be(b, 12, 8);
      h.ccws_size = be(b, 20, 8);
      h.padding_size = static_cast<uint32_t>(be(b, 28, 4));
      h.additional_info_size = be(b, 32, 8);
      h.proto_xxh3 = be(b, 40, 8);
      h.reserved = be(b, 48, 8);
      if (h.ccws_size < h.padding_size)
        throw BadInput(file + ": header field ccws_size_with_padding (" + std::to_string(h.ccws_size) +
                       ") is smaller than hef_padding_size (" + std::to_string(h.padding_size) + ")");
      break;
  }
  if (static_cast<uint64_t>(h.proto_size) > file_size - hs)
    throw BadInput(file + ": header field hef_proto_size (" + std::to_string(h.proto_size) +
                   ") runs past the end of the file (" + std::to_string(file_size - hs) + " bytes after the header)");
  if (h.zero_point() > file_size)
    throw BadInput(file + ": header fields hef_proto_size + hef_padding_size (" + std::to_string(h.zero_point()) +
                   " with the header) run past the end of the file (" + std::to_string(file_size) + " bytes)");
  return h;
}

std::string serialize_hef_header_v3(const HefHeader& h) {
  std::string out;
  out.reserve(56);
  put_be(out, kHefMagic, 4);
  put_be(out, 3, 4);
  put_be(out, h.proto_size, 4);
  put_be(out, h.xxh3, 8);
  put_be(out, h.ccws_size, 8);
  put_be(out, h.padding_size, 4);
  put_be(out, h.additional_info_size, 8);
  put_be(out, h.proto_xxh3, 8);
  put_be(out, h.reserved, 8);
  return out;
}

}  // namespace llm2hef::core::hef
