// Weights to float32: the loop export spends its CPU time in.
//
// Written for the vectoriser: no call and no branch per element (the F16
// select is a mask). core/CMakeLists.txt compiles this file with GCC's
// dynamic vectoriser cost model, because -O2's default ("very cheap") leaves
// loops of unknown length scalar. Exact for every input:
// tests/unit/test_safetensors.cpp checks all 65536 values of F16 and BF16.
#include <bit>
#include <cstring>

#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

void bf16_block_to_f32(const uint8_t* src, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    out[i] = std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
  }
}

// Exponent and mantissa moved into float32's positions read as a float32 that
// is the half's magnitude times 2^-112 (subnormal halves land on float32
// subnormals), so one exact multiply by 2^112 rebiases every finite value.
// Infinities and NaNs (exponent 31) are put back, payload kept, by the mask.
void f16_block_to_f32(const uint8_t* src, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    const uint32_t h = v;
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t scaled = std::bit_cast<uint32_t>(std::bit_cast<float>((h & 0x7fffu) << 13) * 0x1p112f);
    const uint32_t special = 0x7f800000u | ((h & 0x3ffu) << 13);
    const uint32_t is_special = 0u - static_cast<uint32_t>((h & 0x7c00u) == 0x7c00u);
    out[i] = std::bit_cast<float>(sign | (special & is_special) | (scaled & ~is_special));
  }
}

}  // namespace

float f16_to_f32(uint16_t h) {
  float out;
  f16_block_to_f32(reinterpret_cast<const uint8_t*>(&h), &out, 1);
  return out;
}

float bf16_to_f32(uint16_t b) {
  float out;
  bf16_block_to_f32(reinterpret_cast<const uint8_t*>(&b), &out, 1);
  return out;
}

void convert_to_f32(sdk::DType dtype, const uint8_t* src, std::span<float> out) {
  switch (dtype) {
    case sdk::DType::f32:
      if (!out.empty()) std::memcpy(out.data(), src, out.size() * sizeof(float));
      return;
    case sdk::DType::f16:
      f16_block_to_f32(src, out.data(), out.size());
      return;
    case sdk::DType::bf16:
      bf16_block_to_f32(src, out.data(), out.size());
      return;
    case sdk::DType::other:
      break;
  }
  throw InternalError("convert_to_f32: dtype cannot be converted to float32");
}

}  // namespace llm2hef::core
