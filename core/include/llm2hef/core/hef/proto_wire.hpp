// A minimal protobuf wire-format reader and writer for the HEF's ProtoHEFHef.
//
// Why not protoc + hef.proto: llm2hef reads a handful of fields (section 10 of
// hailo-contract.md gives their numbers) and set-config must re-emit
// everything else byte for byte, including fields a newer DFC adds that no
// schema of ours knows. Walking the wire format directly keeps unknown fields
// intact by construction, needs no generated code, and keeps the fuzz target
// free of libprotobuf.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core::hef {

enum class WireType : uint8_t { varint = 0, fixed64 = 1, bytes = 2, fixed32 = 5 };

struct WireField {
  uint32_t number = 0;
  WireType type = WireType::varint;
  uint64_t value = 0;      // varint, fixed64 and fixed32 payloads
  std::string_view bytes;  // length-delimited payload (sub-message, string, packed)
  std::string_view raw;    // the whole field, tag included, for verbatim re-emission
};

// Splits one message into its fields. Throws BadInput naming `context` (a
// "file: path.to.message" string) on a truncated or malformed encoding.
std::vector<WireField> read_fields(std::string_view message, const std::string& context);

// Decodes a fixed32 payload as the IEEE float it carries.
float fixed32_as_float(uint64_t value);

void put_varint(std::string& out, uint64_t value);
void put_tag(std::string& out, uint32_t number, WireType type);
void put_varint_field(std::string& out, uint32_t number, uint64_t value);
void put_bytes_field(std::string& out, uint32_t number, std::string_view payload);

}  // namespace llm2hef::core::hef
