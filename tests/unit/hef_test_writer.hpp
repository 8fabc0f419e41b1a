// Builds small HEF images in memory for the unit tests, from the format facts
// (hailo-contract.md section 10) and independently of the parser under test:
// the protobuf is encoded by field number here, the header packed by hand.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hef_test {

inline std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
inline std::string fv(uint32_t num, uint64_t v) { return varint(uint64_t{num} << 3) + varint(v); }
inline std::string fb(uint32_t num, const std::string& payload) {
  return varint((uint64_t{num} << 3) | 2) + varint(payload.size()) + payload;
}
// `n` big-endian bytes of `v`; bytes above the eighth are zero (a 16-byte
// reserved field), never a shift past 63 bits.
inline void be(std::string& out, uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i) out.push_back(static_cast<char>(i >= 8 ? 0 : (v >> (8 * i)) & 0xff));
}
inline uint64_t xxh3(const std::string& s) { return XXH3_64bits(s.data(), s.size()); }

struct Image {
  std::string bytes;
  uint64_t zero_point = 0;
};

// A version 3 HEF with `resources` (name, bytes) after a CCW stand-in, an
// optional extra top-level proto field, and both hashes filled in.
inline Image v3_hef(const std::vector<std::pair<std::string, std::string>>& resources, uint32_t padding = 8,
                    bool proto_hash = true, const std::string& extra_proto = "") {
  const std::string ccws(100, '\x5a');
  std::string additional, proto = fb(1, fv(1, 103) + fb(3, "5.1.0"));
  for (const auto& [name, data] : resources) {
    const uint64_t offset = ccws.size() + additional.size();
    proto += fb(7, fv(1, offset) + fv(2, data.size()) + fb(3, name) + fv(4, xxh3(data)));
    additional += data;
  }
  proto += extra_proto;
  const std::string body = proto + std::string(padding, '\0') + ccws + additional;
  std::string h;
  be(h, 0x01484546, 4);
  be(h, 3, 4);
  be(h, proto.size(), 4);
  be(h, xxh3(body), 8);
  be(h, ccws.size() + padding, 8);
  be(h, padding, 4);
  be(h, additional.size(), 8);
  be(h, proto_hash ? xxh3(proto) : 0, 8);
  be(h, 0, 8);
  return {h + body, 56 + proto.size() + padding};
}

}  // namespace hef_test
