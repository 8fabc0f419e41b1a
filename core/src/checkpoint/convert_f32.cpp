// Weights to float32: the loop export spends its CPU time in.
//
// Written for the vectoriser: no call and no branch per element (the F16
// select is a mask). core/CMakeLists.txt compiles this file with GCC's
// dynamic vectoriser cost model, because -O2's default ("very cheap") leaves
// loops of unknown length scalar. Exact for every input:
// tests/unit/test_safetensors.cpp checks all 65536 values of F16 and BF16.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

// Each block converter also reports whether the block holds a NaN or an
// infinity, from the source's exponent bits in the same pass (a separate
// scan of the float32 output cost export more than the conversion did).
//
// Formats that are float32's upper bits (BF16: the top 16; F32 itself):
// shifted into place, nothing else to do.
template <typename Bits, Bits kExponentMask, int kShift>
bool upper_bits_block_to_f32(const uint8_t* src, float* out, size_t n) {
  uint32_t special = 0;
  for (size_t i = 0; i < n; ++i) {
    Bits v;
    std::memcpy(&v, src + sizeof(Bits) * i, sizeof(Bits));
    special |= static_cast<uint32_t>((v & kExponentMask) == kExponentMask);
    out[i] = std::bit_cast<float>(static_cast<uint32_t>(v) << kShift);
  }
  return special != 0;
}
constexpr auto bf16_block_to_f32 = upper_bits_block_to_f32<uint16_t, 0x7f80u, 16>;
constexpr auto f32_block_copy = upper_bits_block_to_f32<uint32_t, 0x7f800000u, 0>;

// Exponent and mantissa moved into float32's positions read as a float32 that
// is the half's magnitude times 2^-112 (subnormal halves land on float32
// subnormals), so one exact multiply by 2^112 rebiases every finite value.
// Infinities and NaNs (exponent 31) are put back, payload kept, by the mask.
bool f16_block_to_f32(const uint8_t* src, float* out, size_t n) {
  uint32_t any_special = 0;
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    const uint32_t h = v;
    const uint32_t sign = (h & 0x8000u) << 16;
    const uint32_t scaled = std::bit_cast<uint32_t>(std::bit_cast<float>((h & 0x7fffu) << 13) * 0x1p112f);
    const uint32_t special = 0x7f800000u | ((h & 0x3ffu) << 13);
    const uint32_t is_special = 0u - static_cast<uint32_t>((h & 0x7c00u) == 0x7c00u);
    any_special |= is_special;
    out[i] = std::bit_cast<float>(sign | (special & is_special) | (scaled & ~is_special));
  }
  return any_special != 0;
}

size_t first_nonfinite_in(std::span<const float> v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return i;
  return v.size();
}

}  // namespace

size_t first_nonfinite_f32(const uint8_t* src, size_t n) {
  // In blocks, like the conversion: one OR over the exponent tests per block
  // (vectorised), and a second walk only of the block that has one.
  constexpr size_t kBlock = 4096;
  const auto special = [src](size_t i) {
    uint32_t v;
    std::memcpy(&v, src + 4 * i, 4);
    return (v & 0x7f800000u) == 0x7f800000u;
  };
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    uint32_t any = 0;
    for (size_t i = b; i < e; ++i) any |= static_cast<uint32_t>(special(i));
    if (any)
      for (size_t i = b; i < e; ++i)
        if (special(i)) return i;
  }
  return n;
}

float f16_to_f32(uint16_t h) {
  float out;
  (void)f16_block_to_f32(reinterpret_cast<const uint8_t*>(&h), &out, 1);
  return out;
}

float bf16_to_f32(uint16_t b) {
  float out;
  (void)bf16_block_to_f32(reinterpret_cast<const uint8_t*>(&b), &out, 1);
  return out;
}

size_t convert_to_f32(sdk::DType dtype, const uint8_t* src, std::span<float> out) {
  bool (*block)(const uint8_t*, float*, size_t) = nullptr;
  size_t esize = 0;
  switch (dtype) {
    case sdk::DType::f32: block = f32_block_copy, esize = 4; break;
    case sdk::DType::f16: block = f16_block_to_f32, esize = 2; break;
    case sdk::DType::bf16: block = bf16_block_to_f32, esize = 2; break;
    case sdk::DType::other: throw InternalError("convert_to_f32: dtype cannot be converted to float32");
  }
  // Blocks small enough that the one holding a non-finite value is still in
  // cache when it is walked again for the value's index.
  constexpr size_t kBlock = 4096;
  size_t first_bad = out.size();
  for (size_t b = 0; b < out.size(); b += kBlock) {
    const size_t n = std::min(kBlock, out.size() - b);
    if (block(src + b * esize, out.data() + b, n) && first_bad == out.size())
      first_bad = b + first_nonfinite_in(out.subspan(b, n));
  }
  return first_bad;
}

}  // namespace llm2hef::core
