// GGUF: dequantization against gguf-py bit for bit, the header parser on
// hostile bytes, and the name tables.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "llm2hef/core/checkpoint/gguf_dequant.hpp"
#include "llm2hef/core/checkpoint/gguf_file.hpp"
#include "llm2hef/core/checkpoint/gguf_names.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;
using namespace llm2hef::core;

namespace {

const std::string kRefs = std::string(LLM2HEF_SOURCE_DIR) + "/tests/fixtures/gguf-dequant/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A 1-D little-endian float32 .npy (numpy format 1.0), as the fixture script writes it.
std::vector<float> read_npy_f32(const std::string& path) {
  const std::vector<uint8_t> b = read_bytes(path);
  EXPECT_GE(b.size(), 10u);
  const uint16_t header = static_cast<uint16_t>(b[8] | (b[9] << 8));
  const std::string dict(b.begin() + 10, b.begin() + 10 + header);
  EXPECT_NE(dict.find("'<f4'"), std::string::npos) << path;
  std::vector<float> v((b.size() - 10 - header) / 4);
  std::memcpy(v.data(), b.data() + 10 + header, v.size() * 4);
  return v;
}

const GgmlType* type_named(const std::string& name) {
  for (uint32_t id = 0; id < 64; ++id)
    if (const GgmlType* t = find_ggml_type(id); t && name == t->name) return t;
  return nullptr;
}

}  // namespace

TEST(GgufDequant, EveryTypeEqualsGgufPyBitForBit) {
  for (const char* name :
       {"F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}) {
    SCOPED_TRACE(name);
    const GgmlType* t = type_named(name);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->dequantized);
    const std::vector<uint8_t> raw = read_bytes(kRefs + name + ".bin");
    const std::vector<float> want = read_npy_f32(kRefs + name + ".npy");
    ASSERT_EQ(raw.size() % t->type_size, 0u);
    const size_t blocks = raw.size() / t->type_size;
    ASSERT_EQ(want.size(), blocks * t->block_size);
    std::vector<float> got(want.size());
    dequantize_blocks(*t, raw.data(), blocks, got.data());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(want[i]) && mismatches++ < 5)
        ADD_FAILURE() << name << " value " << i << ": " << got[i] << " != gguf-py's " << want[i];
    EXPECT_EQ(mismatches, 0u);
  }
}

TEST(GgufDequant, UnsupportedTypesAreKnownButNotRead) {
  const GgmlType* iq2 = find_ggml_type(16);
  ASSERT_NE(iq2, nullptr);
  EXPECT_STREQ(iq2->name, "IQ2_XXS");
  EXPECT_FALSE(iq2->dequantized);
  EXPECT_EQ(find_ggml_type(4), nullptr);  // removed from ggml (Q4_2)
  EXPECT_NE(dequantized_type_names().find("Q6_K"), std::string::npos);
}

// ---------------------------------------------------------------- the parser

namespace {

// A GGUF writer for hostile cases: every field as the format lays it out.
struct Writer {
  std::vector<uint8_t> b;
  template <typename T>
  Writer& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Writer& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Writer& header(uint64_t tensors, uint64_t kvs, uint32_t version = 3) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return put<uint32_t>(version).put<uint64_t>(tensors).put<uint64_t>(kvs);
  }
  Writer& kv_u32(const std::string& k, uint32_t v) { return str(k).put<uint32_t>(4).put<uint32_t>(v); }
  Writer& kv_str(const std::string& k, const std::string& v) { return str(k).put<uint32_t>(8).str(v); }
  Writer& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  Writer& pad_to(size_t align) {
    while (b.size() % align) b.push_back(0);
    return *this;
  }
  Writer& data(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

GgufHeader parse(const std::vector<uint8_t>& b) { return parse_gguf_header(b, b.size(), "m.gguf"); }

// The message of the BadInput that parsing `b` throws ("" when none).
std::string error_of(const std::vector<uint8_t>& b) {
  try {
    parse(b);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

Writer valid() {
  Writer w;
  w.header(2, 2).kv_str("general.architecture", "llama").kv_u32("general.alignment", 32);
  w.tensor("a.weight", {4, 2}, 0, 0).tensor("b.weight", {32}, 8, 32);
  w.pad_to(32).data(32).data(34);
  return w;
}

}  // namespace

TEST(GgufHeader, ValidFileParses) {
  const GgufHeader h = parse(valid().b);
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.metadata["general.architecture"], "llama");
  EXPECT_EQ(h.metadata["general.alignment"], 32);
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].torch_shape(), (std::vector<int64_t>{2, 4}));
  EXPECT_STREQ(h.tensors[1].type->name, "Q8_0");
  EXPECT_EQ(h.tensors[1].end - h.tensors[1].begin, 34u);
}

TEST(GgufHeader, MetadataValuesKeepTheirJsonKinds) {
  Writer w;
  w.header(0, 4);
  w.str("f").put<uint32_t>(6).put<float>(0.5f);
  w.str("b").put<uint32_t>(7).put<uint8_t>(1);
  w.str("i").put<uint32_t>(5).put<int32_t>(-3);
  // array of two arrays of uint8
  w.str("nested").put<uint32_t>(9).put<uint32_t>(9).put<uint64_t>(2);
  w.put<uint32_t>(0).put<uint64_t>(1).put<uint8_t>(7);
  w.put<uint32_t>(0).put<uint64_t>(0);
  const GgufHeader h = parse(w.b);
  EXPECT_EQ(h.metadata["f"], 0.5);
  EXPECT_EQ(h.metadata["b"], true);
  EXPECT_EQ(h.metadata["i"], -3);
  EXPECT_EQ(h.metadata["nested"].dump(), "[[7],[]]");
  EXPECT_EQ(h.metadata_types.at("nested"), "array of array of uint8");
}

TEST(GgufHeader, EveryTruncationIsRefusedNamingTheFile) {
  const std::vector<uint8_t> full = valid().b;
  for (size_t n = 0; n + 1 < full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    const std::string e = error_of(cut);
    EXPECT_NE(e.find("m.gguf"), std::string::npos) << "length " << n << ": '" << e << "'";
  }
}

TEST(GgufHeader, HostileCountsAndLengths) {
  const uint64_t huge = ~uint64_t{0} - 3;
  {
    Writer w;
    w.header(0, huge);
    EXPECT_NE(error_of(w.b).find("key-value count"), std::string::npos);
  }
  {
    Writer w;
    w.header(huge, 0);
    EXPECT_NE(error_of(w.b).find("tensor count"), std::string::npos);
  }
  {
    Writer w;
    w.header(0, 1).put<uint64_t>(huge).data(16);  // key length
    EXPECT_NE(error_of(w.b).find("string length"), std::string::npos);
  }
  {
    Writer w;
    w.header(0, 1).str("tokenizer.ggml.tokens").put<uint32_t>(9).put<uint32_t>(8).put<uint64_t>(huge);
    const std::string e = error_of(w.b);
    EXPECT_NE(e.find("tokenizer.ggml.tokens"), std::string::npos) << e;
  }
  {
    Writer w;
    w.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(huge);  // string value length
    EXPECT_NE(error_of(w.b).find("'k'"), std::string::npos);
  }
  {
    Writer w;
    w.header(1, 0).tensor("t", {~uint64_t{0} / 2, 4}, 0, 0);
    EXPECT_NE(error_of(w.b).find("'t'"), std::string::npos);
  }
}

TEST(GgufHeader, MalformedFieldsNameTheKeyOrTensor) {
  const auto expect = [](Writer w, const std::string& needle) {
    const std::string e = error_of(w.b);
    EXPECT_NE(e.find(needle), std::string::npos) << "expected '" << needle << "' in '" << e << "'";
  };
  Writer bad_magic;
  bad_magic.b = {'G', 'G', 'U', 'X', 3, 0, 0, 0};
  expect(bad_magic, "not a GGUF file");
  expect(Writer().header(0, 0, 1), "version 1");
  expect(Writer().header(0, 0, 0x03000000u), "big-endian");
  expect(Writer().header(0, 2).kv_u32("a", 1).kv_u32("a", 2), "'a' appears twice");
  expect(Writer().header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0), "unknown value type 13");
  expect(Writer().header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2), "neither 0 nor 1");
  expect(Writer().header(0, 1).kv_str("general.alignment", "32"), "'general.alignment' is a string, expected uint32");
  expect(Writer().header(0, 1).kv_u32("general.alignment", 12), "power of two");
  expect(Writer().header(1, 0).tensor("t", {4}, 99, 0).pad_to(32).data(16), "'t': unknown ggml type 99");
  expect(Writer().header(1, 0).tensor("t", {4}, 0, 8).pad_to(32).data(64), "'t': data offset 8 is not a multiple");
  expect(Writer().header(1, 0).tensor("t", {4}, 0, 0).pad_to(32).data(8), "'t': data [0, +16) runs past the end");
  expect(Writer().header(1, 0).tensor("t", {16}, 2, 0).pad_to(32).data(64), "not a multiple of Q4_0's block");
  expect(Writer().header(2, 0).tensor("t", {4}, 0, 0).tensor("t", {4}, 0, 32).pad_to(32).data(64),
         "'t': appears twice");
  expect(Writer().header(2, 0).tensor("t", {16}, 0, 0).tensor("u", {4}, 0, 32).pad_to(32).data(64),
         "'u': data at offset 32 overlaps that of tensor 't'");
  expect(Writer().header(1, 0).tensor("t", {}, 0, 0), "has 0 dimensions");
  expect(Writer().header(1, 0).tensor(std::string(65, 'x'), {4}, 0, 0), "longer than the 64");
}

TEST(GgufNames, TablesMapGgufNamesBackToHuggingFace) {
  const GgufArch* llama = find_gguf_arch("llama");
  ASSERT_NE(llama, nullptr);
  auto q = map_gguf_tensor(*llama, "blk.12.attn_q.weight");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->hf_name, "model.layers.12.self_attn.q_proj.weight");
  EXPECT_EQ(q->transform, GgufTransform::rope_unpermute);
  EXPECT_TRUE(q->is_q);
  EXPECT_EQ(q->block, 12);  // checked against block_count by the checkpoint
  EXPECT_EQ(map_gguf_tensor(*llama, "token_embd.weight")->block, -1);
  EXPECT_EQ(map_gguf_tensor(*llama, "blk.0.attn_v.weight")->transform, GgufTransform::none);
  EXPECT_FALSE(map_gguf_tensor(*llama, "blk.01.attn_q.weight"));  // not how ggml writes an index
  EXPECT_FALSE(map_gguf_tensor(*llama, "blk.0.ffn_gate_exps.weight"));
  EXPECT_EQ(map_gguf_tensor(*find_gguf_arch("gemma3"), "blk.0.attn_q_norm.weight")->transform,
            GgufTransform::minus_one);
  EXPECT_EQ(map_gguf_tensor(*find_gguf_arch("gpt2"), "blk.1.ffn_up.weight")->hf_name,
            "transformer.h.1.mlp.c_fc.weight");
  EXPECT_EQ(map_gguf_tensor(*find_gguf_arch("gpt2"), "blk.1.ffn_up.bias")->transform, GgufTransform::none);
  EXPECT_EQ(find_gguf_arch("mamba"), nullptr);
  for (const char* a : {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "granite", "olmo2", "stablelm",
                        "gptneox", "gpt2", "lfm2", "smollm3"})
    EXPECT_NE(find_gguf_arch(a), nullptr) << a;
}

// The rows come from one file each under core/src/checkpoint/gguf/, collected
// by a generated table: each is found by its own name, once, and maps at
// least the token embedding.
TEST(GgufNames, EveryRowIsFoundByItsNameOnce) {
  const std::string list = gguf_supported_archs();
  std::set<std::string> seen;
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(", ", at), list.size());
    const std::string name = list.substr(at, comma - at);
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice in " << list;
    const GgufArch* arch = find_gguf_arch(name);
    ASSERT_NE(arch, nullptr) << name;
    EXPECT_EQ(arch->gguf, name);
    EXPECT_FALSE(arch->hf_architecture.empty() || arch->model_type.empty()) << name;
    EXPECT_TRUE(map_gguf_tensor(*arch, "token_embd.weight")) << name;
    at = comma + 2;
  }
  EXPECT_GE(seen.size(), 14u) << list;  // every row file was found (none goes missing from the glob)
}
