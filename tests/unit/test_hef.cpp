// HEF header, protobuf wire reader, resource bounds and set-config.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "hef_test_writer.hpp"
#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/core/hef/hef_header.hpp"
#include "llm2hef/core/hef/hef_patch.hpp"
#include "llm2hef/core/hef/proto_wire.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace llm2hef::core::hef;
using llm2hef::BadInput;
using llm2hef::core::rules::Finding;
using llm2hef::core::rules::Report;
using llm2hef::core::rules::Severity;
using llm2hef::testing::TempDir;

namespace {

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string common(uint32_t version, uint32_t proto) {
  std::string h;
  hef_test::be(h, 0x01484546, 4);
  hef_test::be(h, version, 4);
  hef_test::be(h, proto, 4);
  return h;
}

void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::string valid_config() {
  return R"({"eos_token_id": 2, "stop_token_id": [2], "pre_process_params": {"prefill_input_tokens_count": 8}})";
}

size_t count(const std::vector<Finding>& fs, Severity s) {
  return static_cast<size_t>(std::count_if(fs.begin(), fs.end(), [&](const auto& f) { return f.severity == s; }));
}

}  // namespace

TEST(ProtoWire, ReadsEveryWireTypeAndKeepsRawBytes) {
  std::string msg = hef_test::fv(1, 300) + hef_test::fb(3, "abc");
  msg += hef_test::varint((5u << 3) | 5) + std::string("\x00\x00\x80\x3f", 4);  // float 1.0
  msg += hef_test::varint((6u << 3) | 1) + std::string(8, '\x01');
  const auto f = read_fields(msg, "t");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0].number, 1u);
  EXPECT_EQ(f[0].value, 300u);
  EXPECT_EQ(f[1].bytes, "abc");
  EXPECT_FLOAT_EQ(fixed32_as_float(f[2].value), 1.0f);
  EXPECT_EQ(f[3].value, 0x0101010101010101u);
  std::string joined;
  for (const auto& x : f) joined += std::string(x.raw);
  EXPECT_EQ(joined, msg);
}

TEST(ProtoWire, WriterMatchesReader) {
  std::string out;
  put_varint_field(out, 2, 1ull << 40);
  put_bytes_field(out, 7, "xyz");
  const auto f = read_fields(out, "t");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].value, 1ull << 40);
  EXPECT_EQ(f[1].bytes, "xyz");
}

TEST(ProtoWire, MalformedInputIsBadInput) {
  EXPECT_THROW(read_fields(std::string("\x08", 1), "t"), BadInput);  // varint missing
  EXPECT_THROW(read_fields(hef_test::varint((3u << 3) | 2) + "\x05"
                                                             "ab",
                           "t"),
               BadInput);                                                // length past end
  EXPECT_THROW(read_fields(std::string("\x0b", 1), "t"), BadInput);      // group start
  EXPECT_THROW(read_fields(std::string("\x00\x01", 2), "t"), BadInput);  // field number 0
  EXPECT_THROW(read_fields(std::string(11, '\xff'), "t"), BadInput);     // endless varint
  try {
    read_fields(hef_test::varint((3u << 3) | 2) + "\x05", "model.hef: ProtoHEFHef");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("model.hef: ProtoHEFHef"), std::string::npos);
  }
}

TEST(HefHeader, ParsesAllFourVersions) {
  {  // v0: md5 and the proto as the rest of the file
    std::string b = common(0, 4) + std::string(4, '\0') + std::string(16, '\x11') + "abcd";
    const HefHeader h = parse_hef_header(span_of(b), b.size(), "v0");
    EXPECT_EQ(h.header_size(), 32u);
    EXPECT_EQ(h.md5[0], 0x11);
    EXPECT_EQ(h.declared_file_size(), b.size());
    EXPECT_EQ(h.zero_point(), 0u);
  }
  {  // v1: crc, ccws_size
    std::string b = common(1, 4);
    hef_test::be(b, 0xdeadbeef, 4);
    hef_test::be(b, 10, 8);
    hef_test::be(b, 0, 4);
    b += std::string(14, 'x');
    const HefHeader h = parse_hef_header(span_of(b), b.size(), "v1");
    EXPECT_EQ(h.header_size(), 28u);
    EXPECT_EQ(h.crc, 0xdeadbeefu);
    EXPECT_EQ(h.ccws_size, 10u);
    EXPECT_EQ(h.zero_point(), 32u);
    EXPECT_EQ(h.declared_file_size(), b.size());
  }
  {  // v2: xxh3, ccws_size, two reserved words
    std::string b = common(2, 4);
    hef_test::be(b, 0x0102030405060708, 8);
    hef_test::be(b, 6, 8);
    hef_test::be(b, 0, 16);
    b += std::string(10, 'x');
    const HefHeader h = parse_hef_header(span_of(b), b.size(), "v2");
    EXPECT_EQ(h.header_size(), 44u);
    EXPECT_EQ(h.xxh3, 0x0102030405060708u);
    EXPECT_EQ(h.zero_point(), 48u);
    EXPECT_EQ(h.declared_file_size(), b.size());
  }
  {  // v3 round trip through the serializer
    const auto img = hef_test::v3_hef({{"a", "1234"}}, 12);
    const HefHeader h = parse_hef_header(span_of(img.bytes), img.bytes.size(), "v3");
    EXPECT_EQ(h.padding_size, 12u);
    EXPECT_EQ(h.zero_point(), img.zero_point);
    EXPECT_EQ(h.declared_file_size(), img.bytes.size());
    EXPECT_EQ(serialize_hef_header_v3(h), img.bytes.substr(0, 56));
  }
}

TEST(HefHeader, RefusesBadMagicVersionAndSizes) {
  const auto img = hef_test::v3_hef({{"a", "1234"}});
  std::string bad = img.bytes;
  bad[1] = 'X';
  EXPECT_THROW(parse_hef_header(span_of(bad), bad.size(), "f"), BadInput);
  bad = img.bytes;
  bad[7] = 9;
  EXPECT_THROW(parse_hef_header(span_of(bad), bad.size(), "f"), BadInput);
  EXPECT_THROW(parse_hef_header(span_of(img.bytes), 30, "f"), BadInput);  // shorter than a v3 header
  bad = img.bytes;
  bad[8] = '\x7f';  // hef_proto_size far past the end
  try {
    parse_hef_header(span_of(bad), bad.size(), "model.hef");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("hef_proto_size"), std::string::npos);
  }
}

TEST(HefFile, ReadsResourcesAndVerifiesChecksums) {
  const auto img = hef_test::v3_hef({{"tokenizer.json", "{}"}, {"embeddings.bin", std::string(64, 'e')}});
  const auto src = memory_source(img.bytes, "m.hef");
  const HefInfo info = read_hef(*src);
  EXPECT_EQ(info.hw_arch.value(), 103u);
  ASSERT_EQ(info.resources.size(), 2u);
  EXPECT_EQ(read_resource(*src, info.resources[0], 100), "{}");
  EXPECT_EQ(info.resources[1].file_offset, img.zero_point + 100 + 2);
  const ChecksumReport all = verify_checksums(*src, info, UINT64_MAX, true);
  EXPECT_EQ(all.proto, ChecksumStatus::ok);
  EXPECT_EQ(all.file, ChecksumStatus::ok);
  EXPECT_EQ(all.resources[1], ChecksumStatus::ok);
  const ChecksumReport small = verify_checksums(*src, info, 10, false);
  EXPECT_EQ(small.resources[1], ChecksumStatus::not_checked);
  EXPECT_EQ(small.file, ChecksumStatus::not_checked);

  std::string flipped = img.bytes;
  flipped.back() ^= 1;  // last byte of embeddings.bin
  const auto src2 = memory_source(flipped, "m.hef");
  const ChecksumReport bad = verify_checksums(*src2, read_hef(*src2), UINT64_MAX, true);
  EXPECT_EQ(bad.resources[1], ChecksumStatus::mismatch);
  EXPECT_EQ(bad.file, ChecksumStatus::mismatch);
  EXPECT_TRUE(bad.any_mismatch());
  // With a proto hash the runtime does not check the whole-file hash.
  EXPECT_FALSE(bad.file_checked_by_runtime);
  EXPECT_EQ(bad.resources[0], ChecksumStatus::ok);
}

TEST(HefFile, ProtoHashMismatchIsBadInput) {
  std::string b = hef_test::v3_hef({{"a", "x"}}).bytes;
  b[60] ^= 0x40;
  const auto src = memory_source(b, "m.hef");
  EXPECT_THROW(read_hef(*src), BadInput);
}

TEST(HefFile, ResourcePastTheEndIsBadInput) {
  auto img = hef_test::v3_hef({{"a", "xyz"}}, 8, false);
  img.bytes.resize(img.bytes.size() - 2);  // cuts the resource; sizes no longer add up either
  const auto src = memory_source(img.bytes, "m.hef");
  EXPECT_THROW(read_hef(*src), BadInput);
}

TEST(HefPatch, SetConfigRoundTripsAndKeepsUnknownFields) {
  TempDir dir;
  const std::string extra = hef_test::fb(77, "keep me");
  const auto img = hef_test::v3_hef({{"hailo-config.json", valid_config()}, {"tokenizer.json", R"({"model": {}})"}},
                                    4000, true, extra);
  write(dir.path() / "in.hef", img.bytes);
  const std::string cfg = R"({"eos_token_id": 7, "pre_process_params": {"prefill_input_tokens_count": 16}, "x": ")" +
                          std::string(300, 'y') + "\"}";
  const SetConfigResult r = set_hailo_config(dir.path() / "in.hef", cfg, dir.path() / "out.hef", false);
  EXPECT_EQ(r.old_size, img.bytes.size());
  EXPECT_EQ(r.new_size, fs::file_size(dir.path() / "out.hef"));

  // The input is untouched.
  std::ifstream in(dir.path() / "in.hef", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), img.bytes);

  const auto src = open_file_source((dir.path() / "out.hef").string());
  const HefInfo info = read_hef(*src);
  EXPECT_TRUE(info.warnings.empty());
  EXPECT_EQ(read_resource(*src, *info.resource("hailo-config.json"), 1 << 20), cfg);
  EXPECT_EQ(read_resource(*src, *info.resource("tokenizer.json"), 1 << 20), R"({"model": {}})");
  EXPECT_FALSE(verify_checksums(*src, info, UINT64_MAX, true).any_mismatch());
  EXPECT_EQ(verify_checksums(*src, info, UINT64_MAX, true).file, ChecksumStatus::ok);
  // Same zero point modulo 4 KiB: the CCWs keep their alignment.
  EXPECT_EQ(info.header.zero_point() % 4096, img.zero_point % 4096);
  // The unknown top-level field survived.
  const std::string proto = read_proto_bytes(*src, info.header);
  EXPECT_NE(proto.find(extra), std::string::npos);

  // A second set-config on the output works too.
  set_hailo_config(dir.path() / "out.hef", valid_config(), dir.path() / "out2.hef", false);
  const auto src2 = open_file_source((dir.path() / "out2.hef").string());
  const HefInfo info2 = read_hef(*src2);
  EXPECT_EQ(read_resource(*src2, *info2.resource("hailo-config.json"), 1 << 20), valid_config());
  EXPECT_EQ(verify_checksums(*src2, info2, UINT64_MAX, true).file, ChecksumStatus::ok);
}

TEST(HefPatch, RefusesBadConfigsAndLeavesNothingBehind) {
  TempDir dir;
  write(dir.path() / "in.hef", hef_test::v3_hef({{"hailo-config.json", valid_config()}}).bytes);
  for (const std::string& cfg :
       {std::string("{not json"), std::string(R"({"pre_process_params": {}})"),
        std::string(R"({"eos_token_id": 1, "pre_process_params": {"prefill_input_tokens_size": 8}})")})
    EXPECT_THROW(set_hailo_config(dir.path() / "in.hef", cfg, dir.path() / "out.hef", false), BadInput) << cfg;
  EXPECT_FALSE(fs::exists(dir.path() / "out.hef"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1);
  // Writing over the input is a usage error.
  EXPECT_THROW(set_hailo_config(dir.path() / "in.hef", valid_config(), dir.path() / "in.hef", true),
               llm2hef::UsageError);
}

TEST(HefContract, HailoConfigRules) {
  EXPECT_TRUE(check_hailo_config_text(valid_config(), "c").empty());
  // eos missing: an error; stop_token_id missing too: a warning.
  const auto no_eos = check_hailo_config_text(R"({"pre_process_params": {"prefill_input_tokens_count": 8}})", "c");
  EXPECT_EQ(count(no_eos, Severity::error), 1u);
  EXPECT_EQ(count(no_eos, Severity::warning), 1u);
  const auto f = check_hailo_config_text(
      R"({"eos_token_id": 1, "stop_token_id": [1], "pre_process_params": {"prefill_input_tokens_size": 8}})", "c");
  ASSERT_EQ(f.size(), 2u);  // _size present, _count missing
  EXPECT_NE(f[0].message.find("prefill_input_tokens_size"), std::string::npos);
  EXPECT_EQ(f[0].section, "6");
}

// Each key with a JSON type nlohmann's get<T>() throws on, or silently
// converts, is exactly one error naming the key (llm_server.cpp 108-196).
TEST(HefContract, HailoConfigTypesAsTheServerReadsThem) {
  const std::pair<const char*, const char*> cases[] = {
      {R"("eos_token_id": "2")", "eos_token_id"},
      {R"("eos_token_id": 2.5)", "eos_token_id"},
      {R"("eos_token_id": true)", "eos_token_id"},
      {R"("eos_token_id": 4294967296)", "eos_token_id"},
      {R"("chat_template": 5)", "chat_template"},
      {R"("stop_token_id": 2)", "stop_token_id"},
      {R"("stop_token_id": [2, "3"])", "stop_token_id"},
      {R"("begin_of_reasoning_token_id": null)", "begin_of_reasoning_token_id"},
      {R"("default_generation_params": {"max_new_tokens": -1})", "max_new_tokens"},
      {R"("default_generation_params": {"top_k": 2.5})", "top_k"},
      {R"("default_generation_params": {"temperature": "0.7"})", "temperature"},
      {R"("default_generation_params": {"do_sample": 1})", "do_sample"},
      {R"("default_generation_params": [])", "default_generation_params"},
      {R"("input_layers_names_suffixes": {"pe_q_cos": 3})", "pe_q_cos"},
      {R"("input_layers_names_suffixes": "input_layer")", "input_layers_names_suffixes"},
  };
  for (const auto& [extra, key] : cases) {
    // eos first so a later "eos_token_id" replaces it (nlohmann keeps the last duplicate).
    const std::string cfg = std::string(R"({"eos_token_id": 2, "stop_token_id": [2], )") + extra +
                            R"(, "pre_process_params": {"prefill_input_tokens_count": 8}})";
    const auto fs = check_hailo_config_text(cfg, "c");
    ASSERT_EQ(count(fs, Severity::error), 1u) << cfg;
    const auto& e = *std::find_if(fs.begin(), fs.end(), [](const auto& x) { return x.severity == Severity::error; });
    EXPECT_EQ(e.rule, "hailo-config");
    EXPECT_NE(e.message.find(key), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("llm_server.cpp"), std::string::npos) << e.message;
  }
  // Integers where floats are read are fine; ints are not silently converted.
  EXPECT_TRUE(check_hailo_config_text(
                  R"({"eos_token_id": 2, "stop_token_id": [2], "default_generation_params": {"temperature": 1,
                      "top_p": 0.9, "top_k": 20, "max_new_tokens": 64, "repetition_penalty": 1.1, "do_sample": false},
                      "pre_process_params": {"prefill_input_tokens_count": 8, "mrope_section": [4]}})",
                  "c")
                  .empty());
}

TEST(HefContract, StopTokensWarnings) {
  const auto missing =
      check_hailo_config_text(R"({"eos_token_id": 2, "pre_process_params": {"prefill_input_tokens_count": 8}})", "c");
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].rule, "stop-tokens");
  EXPECT_EQ(missing[0].severity, Severity::warning);
  const auto lacks = check_hailo_config_text(
      R"({"eos_token_id": 2, "stop_token_id": [3], "pre_process_params": {"prefill_input_tokens_count": 8}})", "c");
  ASSERT_EQ(lacks.size(), 1u);
  EXPECT_NE(lacks[0].message.find("eos_token_id 2"), std::string::npos);
}

TEST(HefContract, HailortVersionArgument) {
  EXPECT_EQ(parse_hailort_version("5.2"), (std::array<uint32_t, 2>{5, 2}));
  EXPECT_EQ(parse_hailort_version("5.3.1"), (std::array<uint32_t, 2>{5, 3}));
  for (const char* bad : {"5", "five", "5.", ".2", "5.2.1.0", ""})
    EXPECT_THROW(parse_hailort_version(bad), llm2hef::UsageError) << bad;
}

// hailort's v1 checksum is the standard CRC-32; "123456789" is its published check value.
TEST(HefChecksums, Crc32IsTheStandardOne) {
  const auto src = memory_source("xx123456789", "m");
  EXPECT_EQ(crc32_of_range(*src, 2, 9), 0xCBF43926u);
}

TEST(HefContract, CheckHefFileReportsMalformedFilesAsAFinding) {
  TempDir dir;
  write(dir.path() / "junk.hef", "not a hef at all");
  const Report rep = check_hef_file((dir.path() / "junk.hef").string());
  ASSERT_EQ(rep.errors(), 1u);
  EXPECT_EQ(rep.findings[0].rule, "format");
  EXPECT_NE(rep.findings[0].message.find("magic"), std::string::npos);
}

TEST(HefFile, V0ResourceCannotPointIntoHeaderOrProto) {
  // v0 counts resource offsets from byte 0: offset 0 would be the header itself.
  const std::string proto = hef_test::fb(7, hef_test::fv(1, 0) + hef_test::fv(2, 4) + hef_test::fb(3, "x"));
  const std::string file = common(0, static_cast<uint32_t>(proto.size())) + std::string(20, '\0') + proto;
  const auto src = memory_source(file, "v0.hef");
  try {
    read_hef(*src);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("points into the header or proto"), std::string::npos) << e.what();
  }
}
