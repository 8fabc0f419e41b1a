// Block layouts: ggml-common.h (block_q4_0 ... block_q6_K), gguf-py
// quants.py. Float steps follow ggml's dequantize_row_* one for one (scale
// products first, then value * scale [- min] or [+ min]); this file is
// compiled with -ffp-contract=off (core/CMakeLists.txt) so that no step is
// fused into an FMA and the results stay bit-identical to the reference.
#include "llm2hef/core/checkpoint/gguf_dequant.hpp"

#include <cstring>
#include <span>
#include <string>

#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

constexpr int kQK = 256;  // QK_K: values per K-quant super-block

float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// block_q4_0: f16 d; u8 qs[16]. Value j is the low nibble of qs[j], value
// j + 16 the high nibble; both offset by -8.
void q4_0(const uint8_t* b, float* y) {
  const float d = half(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
  }
}

// block_q4_1: f16 d; f16 m; u8 qs[16]: nibble * d + m.
void q4_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>(qs[j] & 0x0F) * d + m;
    y[j + 16] = static_cast<float>(qs[j] >> 4) * d + m;
  }
}

// block_q5_0: f16 d; u32 qh; u8 qs[16]. Bit j of qh is the fifth bit of
// value j (j < 32); offset -16.
void q5_0(const uint8_t* b, float* y) {
  const float d = half(b);
  uint32_t qh;
  std::memcpy(&qh, b + 2, 4);
  const uint8_t* qs = b + 6;
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + 16] = static_cast<float>(hi - 16) * d;
  }
}

// block_q5_1: f16 d; f16 m; u32 qh; u8 qs[16]: 5-bit value * d + m.
void q5_1(const uint8_t* b, float* y) {
  const float d = half(b), m = half(b + 2);
  uint32_t qh;
  std::memcpy(&qh, b + 4, 4);
  const uint8_t* qs = b + 8;
  for (int j = 0; j < 16; ++j) {
    const unsigned lo = (qs[j] & 0x0Fu) | (((qh >> j) & 1u) << 4);
    const unsigned hi = (qs[j] >> 4u) | (((qh >> (j + 16)) & 1u) << 4);
    y[j] = static_cast<float>(lo) * d + m;
    y[j + 16] = static_cast<float>(hi) * d + m;
  }
}

// block_q8_0: f16 d; i8 qs[32].
void q8_0(const uint8_t* b, float* y) {
  const float d = half(b);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

// block_q2_K: u8 scales[16] (low nibble: scale, high: min); u8 qs[64]; f16
// d; f16 dmin. Each half of 128 values reads 32 bytes of qs four times (bits
// 0-1, 2-3, 4-5, 6-7); every 16 values have their own scale and min.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* qs = b + 16;
  const float d = half(b + 80), dmin = half(b + 82);
  int group = 0;
  for (int n = 0; n < 2; ++n) {
    const uint8_t* q = qs + 32 * n;
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++group) {
        const float dl = d * static_cast<float>(scales[group] & 0x0F);
        const float ml = dmin * static_cast<float>(scales[group] >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
      }
  }
}

// block_q3_K: u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d. Sixteen 6-bit
// signed scales: low 4 bits from scales[0..8] (low nibbles for groups 0-7,
// high nibbles for 8-15), high 2 bits from scales[8..12]; a value is its two
// bits from qs minus 4 when its hmask bit is clear.
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* qs = b + 32;
  const uint8_t* sc = b + 96;
  const float d = half(b + 108);
  float dl[16];
  for (int i = 0; i < 16; ++i) {
    const int low = (i < 8 ? sc[i] : sc[i - 8] >> 4) & 0x0F;
    const int high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
    dl[i] = d * static_cast<float>((low | (high << 4)) - 32);
  }
  for (int e = 0; e < kQK; ++e) {
    const int n = e / 128, j = (e % 128) / 32, l = e % 32;
    const int low = (qs[32 * n + l] >> (2 * j)) & 3;
    const int hbit = (hmask[l] >> (4 * n + j)) & 1;
    y[e] = dl[e / 16] * static_cast<float>(low - (hbit ? 0 : 4));
  }
}

// The eight 6-bit scales and mins of Q4_K and Q5_K packed in 12 bytes.
void k_scale_min(const uint8_t* s, int j, int& sc, int& m) {
  if (j < 4) {
    sc = s[j] & 63;
    m = s[j + 4] & 63;
  } else {
    sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// block_q4_K: f16 d; f16 dmin; u8 scales[12]; u8 qs[128]. Groups of 32:
// group 2c takes the low nibbles of qs[32c..32c+32], group 2c+1 the high.
void q4_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qs = b + 16;
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    k_scale_min(scales, g, sc, m);
    const float dg = d * static_cast<float>(sc), mg = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (g / 2);
    const int shift = 4 * (g % 2);
    for (int l = 0; l < 32; ++l) *y++ = dg * static_cast<float>((q[l] >> shift) & 0x0F) - mg;
  }
}

// block_q5_K: f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]: Q4_K
// plus a fifth bit, bit g of qh[l] for value l of group g.
void q5_k(const uint8_t* b, float* y) {
  const float d = half(b), dmin = half(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* qs = b + 48;
  for (int g = 0; g < 8; ++g) {
    int sc, m;
    k_scale_min(scales, g, sc, m);
    const float dg = d * static_cast<float>(sc), mg = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (g / 2);
    const int shift = 4 * (g % 2);
    for (int l = 0; l < 32; ++l) {
      const int v = ((q[l] >> shift) & 0x0F) | (((qh[l] >> g) & 1) << 4);
      *y++ = dg * static_cast<float>(v) - mg;
    }
  }
}

// block_q6_K: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d. Value e of half
// h: low 4 bits from ql[64h + e%64] (low nibble for the first 64, high for
// the next), high 2 bits from qh[32h + e%32] (bits 2k for quarter k); offset
// -32; one scale per 16 values.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + 192);
  const float d = half(b + 208);
  float ds[16];
  for (int i = 0; i < 16; ++i) ds[i] = d * static_cast<float>(scales[i]);
  for (int e = 0; e < kQK; ++e) {
    const int h = e / 128, r = e % 128;
    const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
    const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
    y[e] = ds[e / 16] * static_cast<float>((low | (high << 4)) - 32);
  }
}

}  // namespace

void dequantize_blocks(const GgmlType& t, const uint8_t* src, size_t n_blocks, float* out) {
  const std::span<float> all(out, n_blocks * t.block_size);
  switch (t.id) {
    case 0: (void)convert_to_f32(sdk::DType::f32, src, all); return;
    case 1: (void)convert_to_f32(sdk::DType::f16, src, all); return;
    case 30: (void)convert_to_f32(sdk::DType::bf16, src, all); return;
    default: break;
  }
  void (*block)(const uint8_t*, float*) = nullptr;
  switch (t.id) {
    case 2: block = q4_0; break;
    case 3: block = q4_1; break;
    case 6: block = q5_0; break;
    case 7: block = q5_1; break;
    case 8: block = q8_0; break;
    case 10: block = q2_k; break;
    case 11: block = q3_k; break;
    case 12: block = q4_k; break;
    case 13: block = q5_k; break;
    case 14: block = q6_k; break;
    default: throw InternalError(std::string("dequantize_blocks: ggml type ") + t.name + " is not dequantized");
  }
  for (size_t i = 0; i < n_blocks; ++i) block(src + i * t.type_size, out + i * t.block_size);
}

}  // namespace llm2hef::core
