// core::gguf_tokenizer_files on small hand-written GGUF metadata: what is
// written for byte-level and SentencePiece vocabularies, and what is refused.
// The real vocabularies (Llama 3, Qwen3, SmolLM2) are checked by encoding text
// in tests/cli/gguf_input/test_gguf_tokenizer.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "llm2hef/core/checkpoint/gguf_tokenizer.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace {

using llm2hef::BadInput;
using llm2hef::core::gguf_tokenizer_files;
using nlohmann::json;
using nlohmann::ordered_json;

std::string refusal(const ordered_json& md) {
  try {
    gguf_tokenizer_files(md, "model.gguf");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

// A byte-level vocabulary: "a", "b", "ab", "Ġ", then two special tokens.
ordered_json byte_level_metadata(const std::string& pre) {
  return ordered_json{{"general.architecture", "llama"},
                      {"tokenizer.ggml.model", "gpt2"},
                      {"tokenizer.ggml.pre", pre},
                      {"tokenizer.ggml.tokens", {"a", "b", "ab", "\u0120", "<|im_start|>", "<think>", "[PAD6]"}},
                      {"tokenizer.ggml.token_type", {1, 1, 1, 1, 3, 4, 5}},
                      {"tokenizer.ggml.merges", {"a b"}},
                      {"tokenizer.ggml.bos_token_id", 4u},
                      {"tokenizer.ggml.eos_token_id", 4u},
                      {"tokenizer.chat_template", "{{ messages[0]['content'] }}"}};
}

TEST(GgufTokenizer, ByteLevelVocabularyMergesAndAddedTokens) {
  const auto files = gguf_tokenizer_files(byte_level_metadata("qwen2"), "model.gguf");
  const json& t = files.tokenizer_json;
  EXPECT_EQ(t["model"]["type"], "BPE");
  // the added tokens too (ids kept), the UNUSED filler left out
  EXPECT_EQ(t["model"]["vocab"],
            (json{{"a", 0}, {"b", 1}, {"ab", 2}, {"\u0120", 3}, {"<|im_start|>", 4}, {"<think>", 5}}));
  EXPECT_EQ(t["model"]["merges"], json::array({json::array({"a", "b"})}));
  EXPECT_FALSE(t["model"]["ignore_merges"].get<bool>());
  ASSERT_EQ(t["added_tokens"].size(), 2u);  // the UNUSED filler is left out
  EXPECT_EQ(t["added_tokens"][0]["content"], "<|im_start|>");
  EXPECT_TRUE(t["added_tokens"][0]["special"].get<bool>());
  EXPECT_EQ(t["added_tokens"][1]["content"], "<think>");
  EXPECT_FALSE(t["added_tokens"][1]["special"].get<bool>());
  EXPECT_EQ(t["normalizer"]["type"], "NFC");
  EXPECT_EQ(t["pre_tokenizer"]["pretokenizers"][0]["type"], "Split");
  EXPECT_EQ(t["post_processor"]["type"], "ByteLevel");  // qwen2: no BOS by default
  EXPECT_EQ(files.tokenizer_config["bos_token"], "<|im_start|>");
  EXPECT_EQ(files.tokenizer_config["chat_template"], "{{ messages[0]['content'] }}");
  EXPECT_FALSE(files.tokenizer_config["add_bos_token"].get<bool>());
}

TEST(GgufTokenizer, Llama3AddsBosAndIgnoresMergesByDefault) {
  const auto files = gguf_tokenizer_files(byte_level_metadata("llama-bpe"), "model.gguf");
  const json& t = files.tokenizer_json;
  EXPECT_TRUE(t["model"]["ignore_merges"].get<bool>());
  EXPECT_EQ(t["normalizer"], nullptr);
  ASSERT_EQ(t["post_processor"]["type"], "Sequence");
  const json& tp = t["post_processor"]["processors"][1];
  EXPECT_EQ(tp["type"], "TemplateProcessing");
  EXPECT_EQ(tp["single"][0]["SpecialToken"]["id"], "<|im_start|>");
  EXPECT_EQ(tp["special_tokens"]["<|im_start|>"]["ids"], json::array({4}));
  EXPECT_TRUE(files.tokenizer_config["add_bos_token"].get<bool>());
}

TEST(GgufTokenizer, AddBosFlagOverridesTheDefault) {
  auto md = byte_level_metadata("llama-bpe");
  md["tokenizer.ggml.add_bos_token"] = false;
  const auto files = gguf_tokenizer_files(md, "model.gguf");
  EXPECT_EQ(files.tokenizer_json["post_processor"]["type"], "ByteLevel");
}

TEST(GgufTokenizer, SmaugBpeIsTheLlama3SplitWithoutBos) {
  const auto files = gguf_tokenizer_files(byte_level_metadata("smaug-bpe"), "model.gguf");
  const json& t = files.tokenizer_json;
  const json llama3 = gguf_tokenizer_files(byte_level_metadata("llama-bpe"), "model.gguf").tokenizer_json;
  EXPECT_EQ(t["pre_tokenizer"], llama3["pre_tokenizer"]);
  EXPECT_TRUE(t["model"]["ignore_merges"].get<bool>());  // as Meta's tokenizer.json
  EXPECT_EQ(t["post_processor"]["type"], "ByteLevel");   // llama.cpp adds no BOS for smaug-bpe
  EXPECT_FALSE(files.tokenizer_config["add_bos_token"].get<bool>());
}

TEST(GgufTokenizer, SmollmSplitsDigitsOneByOne) {
  const auto t = gguf_tokenizer_files(byte_level_metadata("smollm"), "model.gguf").tokenizer_json;
  EXPECT_EQ(t["pre_tokenizer"]["pretokenizers"][0], (json{{"type", "Digits"}, {"individual_digits", true}}));
  EXPECT_TRUE(t["pre_tokenizer"]["pretokenizers"][1]["use_regex"].get<bool>());
}

TEST(GgufTokenizer, NamedChatTemplatesBecomeAList) {
  auto md = byte_level_metadata("gpt-2");
  md["tokenizer.chat_template.tool_use"] = "tools";
  const auto config = gguf_tokenizer_files(md, "model.gguf").tokenizer_config;
  EXPECT_EQ(config["chat_template"], json::parse(R"([{"name":"default","template":"{{ messages[0]['content'] }}"},
                                                      {"name":"tool_use","template":"tools"}])"));
}

TEST(GgufTokenizer, RefusesWhatItCannotWriteExactly) {
  auto md = byte_level_metadata("deepseek-coder");
  EXPECT_NE(refusal(md).find("model.gguf: metadata key 'tokenizer.ggml.pre': 'deepseek-coder'"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md.erase("tokenizer.ggml.pre");
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.pre': missing"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.model"] = "bert";
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.model': 'bert'"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md.erase("tokenizer.ggml.token_type");
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.token_type': missing"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.token_type"] = {1, 1, 1};
  EXPECT_NE(refusal(md).find("has 3 entries for 7 tokens"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.merges"] = {"a c"};
  EXPECT_NE(refusal(md).find("uses 'c', which is not in the vocabulary"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.merges"] = {"b a"};
  EXPECT_NE(refusal(md).find("makes 'ba', which is not in the vocabulary"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.merges"] = {"ab"};
  EXPECT_NE(refusal(md).find("not two tokens separated by one space"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.tokens"][1] = "a";
  EXPECT_NE(refusal(md).find("token 1 'a' repeats token 0"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.bos_token_id"] = 7u;
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.bos_token_id': token id 7 is outside the vocabulary of 7 tokens"),
            std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.eos_token_id"] = "2";
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.eos_token_id': expected an integer"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.tokens"][0] = std::string("\xff");
  EXPECT_NE(refusal(md).find("token 0 is not UTF-8"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.token_type"][0] = 9;
  EXPECT_NE(refusal(md).find("token 0 has unknown type 9"), std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.ggml.add_eos_token"] = true;
  md.erase("tokenizer.ggml.eos_token_id");
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.eos_token_id': missing, but an EOS token is to be added"),
            std::string::npos);
  md = byte_level_metadata("qwen2");
  md["tokenizer.chat_template"] = 3;
  EXPECT_NE(refusal(md).find("'tokenizer.chat_template': expected a string"), std::string::npos);
  EXPECT_NE(refusal(ordered_json::array()).find("not a key-value map"), std::string::npos);
}

// A SentencePiece vocabulary: <unk>, <s>, </s>, the 256 byte pieces, then
// pieces with scores.
ordered_json sentencepiece_metadata() {
  ordered_json md{{"tokenizer.ggml.model", "llama"},
                  {"tokenizer.ggml.bos_token_id", 1u},
                  {"tokenizer.ggml.eos_token_id", 2u},
                  {"tokenizer.ggml.unknown_token_id", 0u}};
  ordered_json tokens = {"<unk>", "<s>", "</s>"}, types = {2, 3, 3}, scores = {0.0, 0.0, 0.0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
    types.push_back(6);
    scores.push_back(0.0);
  }
  // "▁a" and "ab" both score -1; the longer left half ranks first among equals.
  for (const auto& [t, s] : std::vector<std::pair<std::string, double>>{
           {"\u2581", -0.5}, {"a", -2}, {"b", -3}, {"ab", -1}, {"\u2581a", -1}, {"\u2581ab", -0.25}}) {
    tokens.push_back(t);
    types.push_back(1);
    scores.push_back(s);
  }
  md["tokenizer.ggml.tokens"] = tokens;
  md["tokenizer.ggml.token_type"] = types;
  md["tokenizer.ggml.scores"] = scores;
  return md;
}

TEST(GgufTokenizer, SentencePieceMergesRecoveredFromScores) {
  const auto files = gguf_tokenizer_files(sentencepiece_metadata(), "model.gguf");
  const json& t = files.tokenizer_json;
  EXPECT_TRUE(t["model"]["byte_fallback"].get<bool>());
  EXPECT_TRUE(t["model"]["fuse_unk"].get<bool>());
  EXPECT_EQ(t["model"]["unk_token"], "<unk>");
  EXPECT_EQ(t["model"]["vocab"].size(), 3u + 256u + 6u);
  // Best score first: "▁ab" (-0.25) from ▁a+b or ▁+ab (left half longer first),
  // then the -1 pair: "ab" and "▁a" keep token order (ab is listed first).
  EXPECT_EQ(t["model"]["merges"], json::parse(R"([["▁a","b"],["▁","ab"],["a","b"],["▁","a"]])"));
  EXPECT_EQ(t["normalizer"]["normalizers"][0], (json{{"type", "Prepend"}, {"prepend", "\u2581"}}));
  EXPECT_EQ(t["post_processor"]["type"], "TemplateProcessing");  // llama.cpp adds BOS by default
  ASSERT_EQ(t["added_tokens"].size(), 3u);
  EXPECT_EQ(t["added_tokens"][0]["content"], "<unk>");
}

TEST(GgufTokenizer, SentencePieceRefusals) {
  auto md = sentencepiece_metadata();
  md["tokenizer.ggml.token_type"][3] = 1;  // <0x00> no longer a byte piece
  EXPECT_NE(refusal(md).find("255 BYTE tokens"), std::string::npos);
  md = sentencepiece_metadata();
  md["general.architecture"] = "gemma3n";  // gemma, gemma2 and gemma3 are written as Gemma's (gguf_gemma_vocab.cpp)
  EXPECT_NE(refusal(md).find("vocabulary of architecture 'gemma3n'"), std::string::npos);
  md = sentencepiece_metadata();
  md["general.architecture"] = "gemma3";
  md["tokenizer.ggml.add_space_prefix"] = true;
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.add_space_prefix': true in a gemma3 file"), std::string::npos);
  md = sentencepiece_metadata();
  md["tokenizer.ggml.remove_extra_whitespaces"] = true;
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.remove_extra_whitespaces'"), std::string::npos);
  // Every mergeable piece at one score (the converter's -1000 without tokenizer.model): no merge order.
  md = sentencepiece_metadata();
  for (auto& s : md["tokenizer.ggml.scores"]) s = -1000.0;
  const std::string unordered = refusal(md);
  EXPECT_NE(unordered.find("'tokenizer.ggml.scores': all 3 pieces that merges can make have the score -1000"),
            std::string::npos)
      << unordered;
  EXPECT_NE(unordered.find("tokenizer.json"), std::string::npos);
  // (A tie among some of them is an order still: sentencepiece_metadata's "ab" and "▁a" both score -1.)
  md = sentencepiece_metadata();
  md["tokenizer.ggml.scores"].erase(0);
  EXPECT_NE(refusal(md).find("'tokenizer.ggml.scores': has 264 entries for 265 tokens"), std::string::npos);
}

}  // namespace
