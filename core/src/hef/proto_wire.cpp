// Hand-written on purpose (proto_wire.hpp has the full reason): set-config
// must re-emit fields no schema of ours knows byte for byte, and the HEF fuzz
// target stays free of libprotobuf and generated code.
#include "llm2hef/core/hef/proto_wire.hpp"

#include <cstring>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hef {

namespace {

// Reads a base-128 varint at `pos`; false when the message ends inside it or
// it runs past 10 bytes (the longest 64-bit encoding).
bool read_varint(std::string_view msg, size_t& pos, uint64_t& value) {
  value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (pos >= msg.size()) return false;
    const auto byte = static_cast<uint8_t>(msg[pos++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}

uint64_t read_le(std::string_view msg, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(msg[pos + i])) << (8 * i);
  return v;
}

}  // namespace

std::vector<WireField> read_fields(std::string_view msg, const std::string& context) {
  std::vector<WireField> fields;
  size_t pos = 0;
  while (pos < msg.size()) {
    const size_t start = pos;
    uint64_t tag = 0;
    if (!read_varint(msg, pos, tag))
      throw BadInput(context + ": truncated protobuf field tag at byte " + std::to_string(start));
    WireField f;
    const uint64_t number = tag >> 3;
    if (number == 0 || number > 0x1fffffff)
      throw BadInput(context + ": invalid protobuf field number " + std::to_string(number) + " at byte " +
                     std::to_string(start));
    f.number = static_cast<uint32_t>(number);
    switch (tag & 7) {
      case 0:
        f.type = WireType::varint;
        if (!read_varint(msg, pos, f.value))
          throw BadInput(context + ": truncated varint in field " + std::to_string(number));
        break;
      case 1:
        f.type = WireType::fixed64;
        if (msg.size() - pos < 8) throw BadInput(context + ": truncated fixed64 in field " + std::to_string(number));
        f.value = read_le(msg, pos, 8);
        pos += 8;
        break;
      case 5:
        f.type = WireType::fixed32;
        if (msg.size() - pos < 4) throw BadInput(context + ": truncated fixed32 in field " + std::to_string(number));
        f.value = read_le(msg, pos, 4);
        pos += 4;
        break;
      case 2: {
        f.type = WireType::bytes;
        uint64_t len = 0;
        if (!read_varint(msg, pos, len))
          throw BadInput(context + ": truncated length of field " + std::to_string(number));
        if (len > msg.size() - pos)
          throw BadInput(context + ": field " + std::to_string(number) + " claims " + std::to_string(len) +
                         " bytes but only " + std::to_string(msg.size() - pos) + " remain");
        f.bytes = msg.substr(pos, static_cast<size_t>(len));
        pos += static_cast<size_t>(len);
        break;
      }
      default:
        // Groups (3, 4) do not exist in proto3; 6 and 7 are not wire types.
        throw BadInput(context + ": unsupported protobuf wire type " + std::to_string(tag & 7) + " in field " +
                       std::to_string(number));
    }
    f.raw = msg.substr(start, pos - start);
    fields.push_back(f);
  }
  return fields;
}

float fixed32_as_float(uint64_t value) {
  const auto bits = static_cast<uint32_t>(value);
  float f = 0;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void put_tag(std::string& out, uint32_t number, WireType type) {
  put_varint(out, (static_cast<uint64_t>(number) << 3) | static_cast<uint64_t>(type));
}

void put_varint_field(std::string& out, uint32_t number, uint64_t value) {
  put_tag(out, number, WireType::varint);
  put_varint(out, value);
}

void put_bytes_field(std::string& out, uint32_t number, std::string_view payload) {
  put_tag(out, number, WireType::bytes);
  put_varint(out, payload.size());
  out.append(payload);
}

}  // namespace llm2hef::core::hef
