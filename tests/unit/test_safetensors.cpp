// The safetensors parser and reader: exact dtype conversion, row ranges,
// page release, and one test per malformation the parser must refuse.
// Suite names are lower-case so that `ctest -R "safetensors|checkpoint"` picks them.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "safetensors_test_util.hpp"

using namespace llm2hef;
using namespace llm2hef::testing;
using core::parse_safetensors_header;
using core::SafetensorsFile;
using Json = nlohmann::json;

namespace {

const std::string kLabel = "dir/weights.safetensors";

core::SafetensorsHeader parse(const Bytes& b) { return parse_safetensors_header(b, b.size(), kLabel); }

// Parses `b` expecting BadInput whose message holds the file label and each
// of `parts` (the tensor name, the offending value...).
void expect_bad(const Bytes& b, std::vector<std::string> parts) {
  try {
    parse(b);
    FAIL() << "accepted a malformed header";
  } catch (const BadInput& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(kLabel), std::string::npos) << m;
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

// One tensor entry with the given fields, in an otherwise valid 16-byte file.
Bytes one_entry(const Json& entry, const std::string& name = "w") {
  Json h = {{name, entry}};
  return raw_safetensors(h.dump(), Bytes(16, 0));
}

Json good_entry() { return {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}; }

long rss_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

// ---- conversions ---------------------------------------------------------

TEST(safetensors, F16KnownValues) {
  EXPECT_EQ(core::f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(core::f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(core::f16_to_f32(0x7bff), 65504.0f);
  EXPECT_EQ(core::f16_to_f32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(core::f16_to_f32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(core::f16_to_f32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(core::f16_to_f32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(core::f16_to_f32(0x3555), std::ldexp(1365.0f, -12));  // nearest half to 1/3
  EXPECT_EQ(core::f16_to_f32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(core::f16_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(core::f16_to_f32(0x7e00)));
  EXPECT_TRUE(std::isnan(core::f16_to_f32(0x7c01)));  // signalling payload stays a NaN
  const float neg_zero = core::f16_to_f32(0x8000);
  EXPECT_EQ(neg_zero, 0.0f);
  EXPECT_TRUE(std::signbit(neg_zero));
}

// Every one of the 65536 halves, converted in one block (the vectorised
// path export takes), against IEEE 754 binary16's definition evaluated in
// double: (-1)^s * 2^(e-15) * (1 + m/1024), subnormals 2^-14 * m/1024
// (independent of the bit manipulation under test; exact in double and float).
TEST(safetensors, F16BlockConversionMatchesTheDefinitionOnEveryValue) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> got(all.size());
  core::convert_to_f32(sdk::DType::f16, reinterpret_cast<const uint8_t*>(all.data()), got);
  for (uint32_t i = 0; i < all.size(); ++i) {
    const double sign = (i & 0x8000u) ? -1.0 : 1.0;
    const int e = static_cast<int>((i >> 10) & 0x1fu);
    const double m = static_cast<double>(i & 0x3ffu);
    if (e == 31) {
      if (m == 0) {
        ASSERT_EQ(got[i], static_cast<float>(sign * std::numeric_limits<double>::infinity())) << std::hex << i;
      } else {
        ASSERT_TRUE(std::isnan(got[i])) << std::hex << i;
        // The payload is kept bit for bit (a quiet or signalling NaN stays one).
        ASSERT_EQ(std::bit_cast<uint32_t>(got[i]) & 0x7fffffffu, 0x7f800000u | ((i & 0x3ffu) << 13)) << std::hex << i;
      }
      continue;
    }
    const double want = e == 0 ? sign * std::ldexp(m / 1024.0, -14) : sign * std::ldexp(1.0 + m / 1024.0, e - 15);
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(static_cast<float>(want))) << std::hex << i;
  }
}

// BF16 is float32's upper half: every value, in one block, against the
// float32 whose low 16 bits are zero.
TEST(safetensors, BF16BlockConversionIsTheUpperHalfOnEveryValue) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<float> got(all.size());
  core::convert_to_f32(sdk::DType::bf16, reinterpret_cast<const uint8_t*>(all.data()), got);
  for (uint32_t i = 0; i < all.size(); ++i) ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), i << 16) << std::hex << i;
}

// The conversion reports the first NaN or infinity it met, found from the
// source bits in the same pass: checked against std::isfinite on the output,
// for each dtype, with the bad values on both sides of the converter's
// internal block edges and none at all.
TEST(safetensors, ConversionReportsTheFirstNonFiniteValue) {
  const size_t n = 10000;
  const auto first_by_isfinite = [](const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      if (!std::isfinite(v[i])) return i;
    return v.size();
  };
  struct Case {
    sdk::DType dtype;
    size_t esize;
    std::vector<uint32_t> specials;  // NaNs and infinities of that dtype
    uint32_t finite_max;             // largest finite magnitude's bits
  };
  const std::vector<Case> cases = {
      {sdk::DType::f32, 4, {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u}, 0x7f7fffffu},
      {sdk::DType::f16, 2, {0x7c00u, 0xfc00u, 0x7e00u, 0x7c01u}, 0x7bffu},
      {sdk::DType::bf16, 2, {0x7f80u, 0xff80u, 0x7fc0u, 0x7f81u}, 0x7f7fu},
  };
  for (const Case& c : cases)
    for (const std::vector<size_t>& at :
         std::vector<std::vector<size_t>>{{}, {0}, {4095}, {4096}, {9999}, {4097, 8191}, {8191, 4097}, {5000, 300}}) {
      std::vector<uint8_t> src(n * c.esize);
      for (size_t i = 0; i < n; ++i) {  // finite values up to the largest, both signs
        const uint32_t bits = (i % 7 == 0 ? c.finite_max : static_cast<uint32_t>(i)) |
                              (i % 2 ? (c.esize == 4 ? 0x80000000u : 0x8000u) : 0u);
        std::memcpy(src.data() + i * c.esize, &bits, c.esize);
      }
      for (size_t k = 0; k < at.size(); ++k)
        std::memcpy(src.data() + at[k] * c.esize, &c.specials[k % c.specials.size()], c.esize);
      std::vector<float> out(n);
      const size_t got = core::convert_to_f32(c.dtype, src.data(), out);
      const size_t want = first_by_isfinite(out);
      EXPECT_EQ(got, want) << "dtype size " << c.esize << ", " << at.size() << " bad values";
      EXPECT_EQ(want, at.empty() ? n : *std::min_element(at.begin(), at.end()));
    }
}

// Every half value against an independent definition: (-1)^s * 2^(e-15) * (1 + m/1024).
TEST(safetensors, F16AllValuesExact) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    const float got = core::f16_to_f32(static_cast<uint16_t>(h));
    if (e == 31) {
      EXPECT_TRUE(m ? std::isnan(got) : std::isinf(got)) << h;
      continue;
    }
    double want = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    if (s) want = -want;
    ASSERT_EQ(static_cast<double>(got), want) << "half 0x" << std::hex << h;
    ASSERT_EQ(std::signbit(got), s == 1) << h;
  }
}

TEST(safetensors, Bf16KnownValues) {
  EXPECT_EQ(core::bf16_to_f32(0x3f80), 1.0f);
  EXPECT_EQ(core::bf16_to_f32(0xc0a0), -5.0f);
  EXPECT_EQ(core::bf16_to_f32(0x0001), std::bit_cast<float>(0x00010000u));  // subnormal
  EXPECT_EQ(core::bf16_to_f32(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(core::bf16_to_f32(0x7f80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(core::bf16_to_f32(0xff80), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(core::bf16_to_f32(0x7fc0)));
  EXPECT_EQ(core::bf16_to_f32(0x7f7f), std::bit_cast<float>(0x7f7f0000u));  // largest finite
}

// ---- reading files ---------------------------------------------------------

TEST(safetensors, F32RoundTripIncludingSpecials) {
  TempDir tmp;
  const float sub = std::numeric_limits<float>::denorm_min();
  std::vector<float> v = {1.5f,
                          -0.0f,
                          sub,
                          -sub * 7,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::max(),
                          3.25e-30f};
  write_file(tmp / "a.safetensors", make_safetensors({f32_tensor("x", {2, 4}, v)}));
  SafetensorsFile f(tmp / "a.safetensors");
  const auto* e = f.find("x");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->dtype, sdk::DType::f32);
  EXPECT_EQ(e->shape, (std::vector<int64_t>{2, 4}));
  std::vector<float> out(8);
  f.read_rows(*e, 0, 2, out);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(std::bit_cast<uint32_t>(out[i]), std::bit_cast<uint32_t>(v[i])) << i;
  EXPECT_EQ(f.find("y"), nullptr);
}

TEST(safetensors, F16AndBf16FilesConvertExactly) {
  TempDir tmp;
  std::vector<uint16_t> h = {0x3c00, 0x0001, 0x83ff, 0x7c00, 0xfc00, 0x7bff};
  std::vector<uint16_t> b = {0x3f80, 0x0001, 0x8040, 0x7f80, 0xff80, 0x7f7f};
  write_file(tmp / "a.safetensors",
             make_safetensors({{"h", "F16", {3, 2}, to_bytes(h)}, {"b", "BF16", {6}, to_bytes(b)}}));
  SafetensorsFile f(tmp / "a.safetensors");
  std::vector<float> out(6);
  f.read_rows(*f.find("h"), 0, 3, out);
  for (size_t i = 0; i < h.size(); ++i) EXPECT_EQ(out[i], core::f16_to_f32(h[i])) << i;
  EXPECT_EQ(out[2], -std::ldexp(1023.0f, -24));
  EXPECT_EQ(out[3], std::numeric_limits<float>::infinity());
  f.read_rows(*f.find("b"), 0, 6, out);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(out[i], core::bf16_to_f32(b[i])) << i;
  EXPECT_EQ(out[1], std::ldexp(1.0f, -133));
  EXPECT_EQ(out[2], -std::ldexp(1.0f, -127));
}

TEST(safetensors, ReadRowsRanges) {
  TempDir tmp;
  std::vector<float> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  write_file(tmp / "a.safetensors", make_safetensors({f32_tensor("m", {4, 3}, v), f32_tensor("s", {}, {42.0f}),
                                                      f32_tensor("empty", {0, 3}, {})}));
  SafetensorsFile f(tmp / "a.safetensors");
  const auto& m = *f.find("m");
  std::vector<float> two(6);
  f.read_rows(m, 1, 3, two);
  EXPECT_EQ(two, (std::vector<float>{3, 4, 5, 6, 7, 8}));
  std::vector<float> last(3);
  f.read_rows(m, 3, 4, last);
  EXPECT_EQ(last, (std::vector<float>{9, 10, 11}));
  f.read_rows(m, 2, 2, std::span<float>());  // empty range is fine
  // Reading again after the pages were released gives the same values.
  f.read_rows(m, 1, 3, two);
  EXPECT_EQ(two[0], 3.0f);

  std::vector<float> scalar(1);
  f.read_rows(*f.find("s"), 0, 1, scalar);
  EXPECT_EQ(scalar[0], 42.0f);
  f.read_rows(*f.find("empty"), 0, 0, std::span<float>());

  EXPECT_THROW(f.read_rows(m, 3, 5, last), InternalError);
  EXPECT_THROW(f.read_rows(m, -1, 0, std::span<float>()), InternalError);
  EXPECT_THROW(f.read_rows(m, 2, 1, std::span<float>()), InternalError);
  EXPECT_THROW(f.read_rows(m, 0, 1, two), InternalError);  // output of the wrong size
}

TEST(safetensors, UnalignedDataSection) {
  TempDir tmp;
  std::vector<uint16_t> h = {0x3c00, 0xc000, 0x0001};
  write_file(tmp / "a.safetensors", make_safetensors({{"odd", "U8", {1}, {7}},
                                                      f32_tensor("x", {2}, {1.25f, -3.0f}),
                                                      {"h", "F16", {3}, to_bytes(h)}},
                                                     /*pad_to=*/1));
  SafetensorsFile f(tmp / "a.safetensors");
  std::vector<float> out(2);
  f.read_rows(*f.find("x"), 0, 2, out);
  EXPECT_EQ(out, (std::vector<float>{1.25f, -3.0f}));
  std::vector<float> o3(3);
  f.read_rows(*f.find("h"), 0, 3, o3);
  EXPECT_EQ(o3, (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24)}));
}

TEST(safetensors, MetadataIgnoredAndEveryDtypeAccepted) {
  Json h = {{"__metadata__", {{"format", "pt"}}}};
  const std::vector<std::pair<std::string, size_t>> dtypes = {{"BOOL", 1},    {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1},
                                                              {"F8_E5M2", 1}, {"U16", 2}, {"I16", 2}, {"F16", 2},
                                                              {"BF16", 2},    {"U32", 4}, {"I32", 4}, {"F32", 4},
                                                              {"U64", 8},     {"I64", 8}, {"F64", 8}};
  uint64_t off = 0;
  for (const auto& [dt, size] : dtypes) {
    h["t_" + dt] = {{"dtype", dt}, {"shape", {3}}, {"data_offsets", {off, off + 3 * size}}};
    off += 3 * size;
  }
  const auto header = parse(raw_safetensors(h.dump(), Bytes(off, 0)));
  ASSERT_EQ(header.entries.size(), dtypes.size());
  for (const auto& e : header.entries) {
    EXPECT_EQ(e.name, "t_" + e.dtype_text);
    const auto want = e.dtype_text == "F32"    ? sdk::DType::f32
                      : e.dtype_text == "F16"  ? sdk::DType::f16
                      : e.dtype_text == "BF16" ? sdk::DType::bf16
                                               : sdk::DType::other;
    EXPECT_EQ(e.dtype, want) << e.dtype_text;
    EXPECT_EQ(e.end - e.begin, 3 * e.element_size);
  }
  // Entries come back in file order with absolute offsets.
  EXPECT_EQ(header.entries.front().begin, header.data_start);
}

TEST(safetensors, OtherDtypeIsRefusedOnRead) {
  TempDir tmp;
  write_file(tmp / "ids.safetensors", make_safetensors({{"position_ids", "I64", {2}, Bytes(16, 0)}}));
  SafetensorsFile f(tmp / "ids.safetensors");
  std::vector<float> out(2);
  try {
    f.read_rows(*f.find("position_ids"), 0, 2, out);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()), (tmp / "ids.safetensors").string() +
                                         ": tensor 'position_ids' has dtype I64; only F32, F16 and BF16 weights "
                                         "can be read");
  }
}

TEST(safetensors, FileErrorsNameTheFile) {
  TempDir tmp;
  for (size_t n : {0, 5}) {
    write_file(tmp / "short.safetensors", Bytes(n, 1));
    try {
      SafetensorsFile f(tmp / "short.safetensors");
      FAIL();
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("short.safetensors"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("too short"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(SafetensorsFile(tmp / "absent.safetensors"), BadInput);
  EXPECT_THROW(SafetensorsFile(tmp.path()), BadInput);  // a folder
  // A truncated file: the last tensor's bytes are missing.
  Bytes good = make_safetensors({f32_tensor("a", {2}, {1, 2}), f32_tensor("b", {2}, {3, 4})});
  good.resize(good.size() - 3);
  write_file(tmp / "cut.safetensors", good);
  try {
    SafetensorsFile f(tmp / "cut.safetensors");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("cut.safetensors: tensor 'b'"), std::string::npos) << e.what();
  }
}

// Streaming a tensor larger than memory budgets must not grow the resident
// set: each slice's pages are dropped once converted.
// read_rows converts in slices of 2 Mi values; the first bad value's index
// is reported across slices, counted from the first row asked for, and a
// later slice's bad value does not replace an earlier one.
TEST(safetensors, ReadRowsReportsTheFirstNonFiniteAcrossSlices) {
  TempDir tmp;
  const int64_t rows = 1100, cols = 4096;                             // 4.5 Mi BF16 values: three slices
  std::vector<uint16_t> v(static_cast<size_t>(rows * cols), 0x3f80);  // 1.0
  const size_t second_slice = (size_t{2} << 20) + 123, third_slice = (size_t{4} << 20) + 5;
  v[third_slice] = 0x7f80;  // +Inf
  write_file(tmp / "m.safetensors", make_safetensors({{"w", "BF16", {rows, cols}, to_bytes(v)}}));
  SafetensorsFile f(tmp / "m.safetensors");
  const auto& e = *f.find("w");
  std::vector<float> all(v.size());
  EXPECT_EQ(f.read_rows(e, 0, rows, all), third_slice);
  v[second_slice] = 0xffc0;  // NaN, earlier
  write_file(tmp / "n.safetensors", make_safetensors({{"w", "BF16", {rows, cols}, to_bytes(v)}}));
  SafetensorsFile g(tmp / "n.safetensors");
  EXPECT_EQ(g.read_rows(*g.find("w"), 0, rows, all), second_slice);
  std::vector<float> tail(static_cast<size_t>((rows - 10) * cols));
  EXPECT_EQ(g.read_rows(*g.find("w"), 10, rows, tail), second_slice - 10 * cols);  // from row 10
  std::vector<float> head(static_cast<size_t>(10 * cols));
  EXPECT_EQ(g.read_rows(*g.find("w"), 0, 10, head), head.size());  // none in rows 0-9
}

// Issue 31: F32 rows are lent from the mapping as stored, with the first
// NaN or infinity found as read_rows finds it; other dtypes are not lent.
TEST(safetensors, F32RowsAreLentAsStoredWithTheirFirstNonFinite) {
  TempDir tmp;
  const int64_t rows = 300, cols = 40;  // 12000 values: three of the check's 4096-value blocks
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.25f - 7.0f;
  v[9001] = std::numeric_limits<float>::infinity();
  v[11000] = std::numeric_limits<float>::quiet_NaN();
  std::vector<uint16_t> half(8, 0x3f80);
  write_file(tmp / "m.safetensors",
             make_safetensors({{"w", "F32", {rows, cols}, to_bytes(v)}, {"h", "BF16", {2, 4}, to_bytes(half)}}));
  SafetensorsFile f(tmp / "m.safetensors");
  size_t bad = 99;
  const std::span<const char> all = f.f32_rows(*f.find("w"), 0, rows, bad);
  ASSERT_EQ(all.size(), v.size() * 4);
  EXPECT_EQ(std::memcmp(all.data(), v.data(), all.size()), 0);
  EXPECT_EQ(bad, 9001u);
  EXPECT_TRUE(f.maps(all));
  const std::span<const char> tail = f.f32_rows(*f.find("w"), 226, rows, bad);  // from value 9040
  EXPECT_EQ(tail.size(), size_t{74} * cols * 4);
  EXPECT_EQ(bad, 11000u - 9040u);
  EXPECT_EQ(f.f32_rows(*f.find("w"), 0, 200, bad).size(), size_t{200} * cols * 4);
  EXPECT_EQ(bad, size_t{200} * cols);  // none in rows 0-199
  f.release_lent(all);
  EXPECT_EQ(std::memcmp(all.data(), v.data(), 4 * 9001), 0);  // released pages read back from the file
  EXPECT_TRUE(f.f32_rows(*f.find("h"), 0, 2, bad).empty());
  const std::vector<float> other(4);
  EXPECT_FALSE(f.maps({reinterpret_cast<const char*>(other.data()), 16}));
  EXPECT_THROW(f.f32_rows(*f.find("w"), 10, rows + 1, bad), llm2hef::InternalError);
  for (uint32_t bits : {0x7f800000u, 0xff800000u, 0x7fc00001u, 0x7f7fffffu, 0x00000001u}) {
    uint8_t b[8] = {};
    std::memcpy(b + 1, &bits, 4);  // unaligned
    EXPECT_EQ(llm2hef::core::first_nonfinite_f32(b + 1, 1), (bits & 0x7f800000u) == 0x7f800000u ? 0u : 1u) << bits;
  }
}

TEST(safetensors, StreamingReleasesPages) {
  TempDir tmp;
  const int64_t rows = 4096, cols = 4096;  // 64 MiB of F32
  {
    std::string header =
        Json{{"big", {{"dtype", "F32"}, {"shape", {rows, cols}}, {"data_offsets", {0, rows * cols * 4}}}}}.dump();
    Bytes start = raw_safetensors(header);
    std::ofstream out(tmp / "big.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(start.data()), static_cast<std::streamsize>(start.size()));
    std::vector<float> row(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) row[c] = static_cast<float>(r + c);
      out.write(reinterpret_cast<const char*>(row.data()), cols * 4);
    }
  }
  SafetensorsFile f(tmp / "big.safetensors");
  const auto& e = *f.find("big");
  std::vector<float> block(64 * cols);
  const long before = rss_kb();
  long peak = before;
  for (int64_t r = 0; r < rows; r += 64) {
    f.read_rows(e, r, r + 64, block);
    ASSERT_EQ(block[5], static_cast<float>(r + 5));
    peak = std::max(peak, rss_kb());
  }
  // 64 MiB went through; allow a few MiB of slack for the allocator and edges.
  EXPECT_LT(peak - before, 8 * 1024) << "RSS grew from " << before << " kB to " << peak << " kB";
  // One call over the whole tensor is sliced too: RSS stays near the output.
  std::vector<float> all(static_cast<size_t>(rows * cols));
  std::fill(all.begin(), all.end(), 0.0f);  // fault the output in before measuring
  const long with_output = rss_kb();
  f.read_rows(e, 0, rows, all);
  EXPECT_EQ(all.back(), static_cast<float>(rows - 1 + cols - 1));
  EXPECT_LT(rss_kb() - with_output, 16 * 1024);
}

// ---- malformed headers -----------------------------------------------------

TEST(safetensorsMalformed, HeaderLength) {
  expect_bad(Bytes{1, 2, 3}, {"too short"});
  expect_bad(raw_safetensors(""), {"header length is zero"});
  Bytes huge(16, 0);
  huge[3] = 0x10;  // 0x10000000 = 268 MB > cap
  expect_bad(huge, {"exceeds the limit"});
  Bytes past = raw_safetensors("{}");
  past[0] = 50;  // claims 50 header bytes, file has 2
  expect_bad(past, {"runs past the end of the file"});
  Bytes all_ff(8, 0xff);
  expect_bad(all_ff, {"exceeds the limit"});
}

TEST(safetensorsMalformed, HeaderNotJsonObject) {
  expect_bad(raw_safetensors("{\"a\": "), {"not valid JSON"});
  expect_bad(raw_safetensors("{} trailing"), {"not valid JSON"});
  expect_bad(raw_safetensors(std::string("{\"a\"\0}", 6)), {"not valid JSON"});
  expect_bad(raw_safetensors("[1, 2]"), {"not a JSON object"});
  expect_bad(raw_safetensors("\"text\""), {"not a JSON object"});
  expect_bad(raw_safetensors("{\"x\": [[[[[[1]]]]]]}"), {"'x'", "nested too deeply"});
  expect_bad(raw_safetensors("{\"__metadata__\": 3}"), {"__metadata__"});
  // Trailing spaces are the format's padding and are fine.
  EXPECT_TRUE(parse(raw_safetensors("{}      ")).entries.empty());
}

TEST(safetensorsMalformed, EntryShape) {
  expect_bad(one_entry(5, "wte.weight"), {"tensor 'wte.weight'", "not an object"});
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    Json e = good_entry();
    e.erase(key);
    expect_bad(one_entry(e), {"tensor 'w'", std::string("no '") + key + "'"});
  }
  Json extra = good_entry();
  extra["strides"] = {1, 2};
  expect_bad(one_entry(extra), {"tensor 'w'", "unexpected key 'strides'"});
  // Duplicate keys: nlohmann would keep the last silently.
  expect_bad(raw_safetensors(R"({"w": {"dtype":"F32","dtype":"F16","shape":[2,2],"data_offsets":[0,16]}})", Bytes(16)),
             {"in 'w'", "key 'dtype' appears more than once"});
  expect_bad(raw_safetensors(R"({"w": {"dtype":"F32","shape":[1],"data_offsets":[0,4]},
                                  "w": {"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                             Bytes(16)),
             {"key 'w' appears more than once"});
}

TEST(safetensorsMalformed, Dtype) {
  Json e = good_entry();
  e["dtype"] = "F17";
  expect_bad(one_entry(e, "lm_head.weight"), {"tensor 'lm_head.weight'", "unknown dtype 'F17'"});
  e["dtype"] = "f32";  // case matters in the format
  expect_bad(one_entry(e), {"tensor 'w'", "unknown dtype 'f32'"});
  e["dtype"] = 4;
  expect_bad(one_entry(e), {"tensor 'w'", "dtype is not a string"});
}

TEST(safetensorsMalformed, ShapeDims) {
  Json e = good_entry();
  e["shape"] = {-2, -2};
  expect_bad(one_entry(e), {"tensor 'w'", "-2", "negative"});
  e["shape"] = {2.5, 2};
  expect_bad(one_entry(e), {"tensor 'w'", "2.5", "not an integer"});
  e["shape"] = {"2", 2};
  expect_bad(one_entry(e), {"tensor 'w'", "not an integer"});
  e["shape"] = 4;
  expect_bad(one_entry(e), {"tensor 'w'", "shape is not a list"});
  e["shape"] = {uint64_t{1} << 63, 1};
  expect_bad(one_entry(e), {"tensor 'w'", "too large"});
  // numel fits, numel x 4 bytes does not.
  e["shape"] = {uint64_t{1} << 31, uint64_t{1} << 31};
  expect_bad(one_entry(e), {"tensor 'w'", "overflows"});
  e["shape"] = {uint64_t{1} << 32, uint64_t{1} << 32};
  expect_bad(one_entry(e), {"tensor 'w'", "too many elements"});
}

TEST(safetensorsMalformed, DataOffsets) {
  auto with = [](Json off) {
    Json e = good_entry();
    e["data_offsets"] = std::move(off);
    return one_entry(e, "h.0.attn.c_attn.weight");
  };
  const std::string t = "tensor 'h.0.attn.c_attn.weight'";
  expect_bad(with(16), {t, "not a list of two integers"});
  expect_bad(with({0}), {t, "not a list of two integers"});
  expect_bad(with({0, 8, 16}), {t, "not a list of two integers"});
  expect_bad(with({-1, 15}), {t, "non-negative integers"});
  expect_bad(with({0.0, 16.0}), {t, "non-negative integers"});
  expect_bad(with({16, 0}), {t, "end before they begin"});
  expect_bad(with({0, 12}), {t, "span 12 bytes", "needs 16"});
  expect_bad(with({8, 24}), {t, "run past the end of the data section"});
  Json far = good_entry();
  far["data_offsets"] = {uint64_t{1} << 62, (uint64_t{1} << 62) + 16};
  expect_bad(one_entry(far), {"tensor 'w'", "run past the end"});
}

TEST(safetensorsMalformed, OverlappingRanges) {
  Json h = {{"a", {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 16}}}},
            {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {12, 20}}}}};
  expect_bad(raw_safetensors(h.dump(), Bytes(20)), {"tensor 'b'", "overlap", "tensor 'a'"});
  // The same range twice is an overlap as well.
  h["b"]["data_offsets"] = {0, 16};
  h["b"]["shape"] = {4};
  expect_bad(raw_safetensors(h.dump(), Bytes(20)), {"overlap"});
  // A range inside a longer earlier one.
  h = {{"a", {{"dtype", "F32"}, {"shape", {8}}, {"data_offsets", {0, 32}}}},
       {"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {20, 24}}}},
       {"c", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {8, 12}}}}};
  expect_bad(raw_safetensors(h.dump(), Bytes(32)), {"overlap", "tensor 'a'"});
  // Empty tensors occupy nothing; gaps between tensors are allowed.
  h = {{"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
       {"e", {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {4, 4}}}},
       {"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {12, 16}}}}};
  EXPECT_EQ(parse(raw_safetensors(h.dump(), Bytes(16))).entries.size(), 3u);
}

TEST(safetensorsMalformed, PrefixShorterThanHeader) {
  Bytes b = make_safetensors({f32_tensor("x", {1}, {1.0f})});
  std::span<const uint8_t> prefix(b.data(), 12);
  EXPECT_THROW(parse_safetensors_header(prefix, b.size(), kLabel), BadInput);
  // With the whole header present, a prefix is enough.
  const uint64_t n = b[0];
  EXPECT_EQ(parse_safetensors_header({b.data(), 8 + n}, b.size(), kLabel).entries.size(), 1u);
}
