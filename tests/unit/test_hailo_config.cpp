// The typed hailo-config.json (core/runtime/hailo_config.hpp): the writer
// export uses, the lenient reading the hef check rules use, and the strict
// reading of a document whose every key has its field's JSON type.
#include <gtest/gtest.h>

#include <string>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/runtime/hailo_config.hpp"

namespace {

using nlohmann::json;
namespace core = llm2hef::core;

// What export writes for a small model, as a typed value.
core::HailoConfig exported_config() {
  core::HailoConfig c;
  c.eos_token_id = 2;
  c.stop_token_id = std::vector<int64_t>{2, 7};
  c.chat_template = "{{ messages[0]['content'] }}";
  c.end_of_reasoning_token_id = 9;
  core::HailoGenerationParams& gen = c.default_generation_params.emplace();
  gen.max_new_tokens = 256;
  gen.temperature = 0.7;
  gen.top_p = 0.9;
  gen.top_k = 50;
  gen.repetition_penalty = 1.1;
  gen.do_sample = true;
  core::HailoPreProcessParams& pre = c.pre_process_params.emplace();
  pre.kv_cache_size = 64;
  pre.num_attention_heads = 4;
  pre.num_key_value_heads = 2;
  pre.prefill_input_tokens_count = 16;
  core::HailoInputSuffixes& suffixes = c.input_layers_names_suffixes.emplace();
  suffixes.by_role = {{"embeddings", "input_layer1"}, {"attention_mask", "input_layer2"}};
  return c;
}

// The same document as make_hailo_config built it before the type existed
// (key by key into a json): the written text must not change.
json exported_config_as_built_before() {
  json cfg;
  cfg["eos_token_id"] = int64_t{2};
  cfg["stop_token_id"] = std::vector<int64_t>{2, 7};
  cfg["chat_template"] = "{{ messages[0]['content'] }}";
  cfg["end_of_reasoning_token_id"] = int64_t{9};
  json gen;
  gen["max_new_tokens"] = int64_t{256};
  gen["temperature"] = 0.7;
  gen["top_p"] = 0.9;
  gen["top_k"] = int64_t{50};
  gen["repetition_penalty"] = 1.1;
  gen["do_sample"] = true;
  cfg["default_generation_params"] = gen;
  cfg["pre_process_params"] = {
      {"kv_cache_size", int64_t{64}},
      {"num_attention_heads", int64_t{4}},
      {"num_key_value_heads", int64_t{2}},
      {"prefill_input_tokens_count", int64_t{16}},
  };
  cfg["input_layers_names_suffixes"] = {{"embeddings", "input_layer1"}, {"attention_mask", "input_layer2"}};
  return cfg;
}

TEST(HailoConfig, WriterKeepsThePreviousWritersTextAndKeyOrder) {
  const json written = core::hailo_config_json(exported_config());
  EXPECT_EQ(written.dump(2), exported_config_as_built_before().dump(2));
  // Keys sorted at every level, as nlohmann::json orders them.
  EXPECT_EQ(written.dump(),
            R"({"chat_template":"{{ messages[0]['content'] }}","default_generation_params":{"do_sample":true,)"
            R"("max_new_tokens":256,"repetition_penalty":1.1,"temperature":0.7,"top_k":50,"top_p":0.9},)"
            R"("end_of_reasoning_token_id":9,"eos_token_id":2,"input_layers_names_suffixes":{"attention_mask":)"
            R"("input_layer2","embeddings":"input_layer1"},"pre_process_params":{"kv_cache_size":64,)"
            R"("num_attention_heads":4,"num_key_value_heads":2,"prefill_input_tokens_count":16},)"
            R"("stop_token_id":[2,7]})");
}

TEST(HailoConfig, ReadsWhatItWrites) {
  const json written = core::hailo_config_json(exported_config());
  const auto read = core::read_hailo_config(written);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->eos_token_id, 2);
  EXPECT_EQ(read->stop_token_id, (std::vector<int64_t>{2, 7}));
  EXPECT_FALSE(read->begin_of_reasoning_token_id.has_value());
  EXPECT_EQ(read->end_of_reasoning_token_id, 9);
  ASSERT_TRUE(read->default_generation_params.has_value());
  EXPECT_EQ(read->default_generation_params->temperature, 0.7);
  EXPECT_EQ(read->default_generation_params->do_sample, true);
  ASSERT_TRUE(read->pre_process_params.has_value());
  EXPECT_EQ(read->pre_process_params->prefill_input_tokens_count, 16);
  EXPECT_FALSE(read->pre_process_params->mrope_section.has_value());
  ASSERT_TRUE(read->input_layers_names_suffixes.has_value());
  ASSERT_NE(read->input_layers_names_suffixes->find("embeddings"), nullptr);
  EXPECT_EQ(*read->input_layers_names_suffixes->find("embeddings"), "input_layer1");
  EXPECT_EQ(read->input_layers_names_suffixes->find("pe_q_cos"), nullptr);
  EXPECT_EQ(core::hailo_config_json(*read).dump(2), written.dump(2));
}

// Keys the server does not read, at every level, survive a read and a write;
// a document that leaves keys out does not gain them.
TEST(HailoConfig, RoundTripKeepsUnknownKeys) {
  const json doc = json::parse(R"({
    "eos_token_id": 5, "stop_token_id": [5], "vendor_note": {"made_by": "hand", "ids": [1, "x"]},
    "default_generation_params": {"top_k": 20, "min_p": 0.05},
    "pre_process_params": {"kv_cache_size": 128, "prefill_input_tokens_count": 32, "mrope_section": [16, 24, 24],
                           "rope_scaling": null},
    "input_layers_names_suffixes": {"embeddings": "input_layer1", "vision_tokens": "input_layer9",
                                    "audio": 3}
  })");
  const auto read = core::read_hailo_config(doc);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->other, json::parse(R"({"vendor_note": {"made_by": "hand", "ids": [1, "x"]}})"));
  EXPECT_EQ(read->default_generation_params->other, json::parse(R"({"min_p": 0.05})"));
  EXPECT_EQ(read->pre_process_params->other, json::parse(R"({"rope_scaling": null})"));
  EXPECT_EQ(read->pre_process_params->mrope_section, (std::vector<int64_t>{16, 24, 24}));
  EXPECT_FALSE(read->chat_template.has_value());
  EXPECT_FALSE(read->default_generation_params->temperature.has_value());
  // A role the server does not read may hold anything.
  EXPECT_EQ(read->input_layers_names_suffixes->other, json::parse(R"({"audio": 3})"));
  EXPECT_EQ(*read->input_layers_names_suffixes->find("vision_tokens"), "input_layer9");
  EXPECT_EQ(core::hailo_config_json(*read).dump(), doc.dump());
  EXPECT_EQ(core::hailo_config_json(core::read_hailo_config_keys(doc)).dump(), doc.dump());
}

// A key the server reads, of another JSON type than its field: the strict
// reading refuses the document; the lenient one keeps the key as found and
// types the others.
TEST(HailoConfig, WrongJsonTypesAreNotTyped) {
  const char* cases[] = {
      R"({"eos_token_id": "2"})",
      R"({"eos_token_id": 2.0})",
      R"({"eos_token_id": true})",
      R"({"eos_token_id": 18446744073709551615})",
      R"({"stop_token_id": 2})",
      R"({"stop_token_id": [2, "3"]})",
      R"({"chat_template": ["{{ x }}"]})",
      R"({"begin_of_reasoning_token_id": null})",
      R"({"default_generation_params": []})",
      R"({"default_generation_params": {"temperature": "0.7"}})",
      R"({"default_generation_params": {"do_sample": 1}})",
      R"({"default_generation_params": {"top_k": 2.5}})",
      R"({"pre_process_params": "kv_cache_size=64"})",
      R"({"pre_process_params": {"kv_cache_size": 64.0}})",
      R"({"pre_process_params": {"mrope_section": [16, 2.5]}})",
      R"({"input_layers_names_suffixes": {"pe_q_cos": 3}})",
      R"({"input_layers_names_suffixes": "input_layer"})",
  };
  for (const char* text : cases) {
    json doc = json::parse(text);
    doc["vendor_key"] = 1;  // a key the server does not read, beside the wrong one
    EXPECT_FALSE(core::read_hailo_config(doc).has_value()) << text;
    const core::HailoConfig lenient = core::read_hailo_config_keys(doc);
    EXPECT_EQ(core::hailo_config_json(lenient), doc) << text;
    EXPECT_FALSE(lenient.eos_token_id.has_value() && doc.contains("eos_token_id")) << text;
  }
  // The lenient reading types each key on its own.
  const core::HailoConfig partly = core::read_hailo_config_keys(
      json::parse(R"({"eos_token_id": 3, "stop_token_id": "3", "pre_process_params": {"kv_cache_size": -1,
                      "num_attention_heads": false}})"));
  EXPECT_EQ(partly.eos_token_id, 3);
  EXPECT_FALSE(partly.stop_token_id.has_value());
  EXPECT_TRUE(partly.has_untyped("stop_token_id"));
  EXPECT_EQ(partly.pre_process_params->kv_cache_size, -1);  // a range is the "hailo-config" rule's to judge
  EXPECT_FALSE(partly.pre_process_params->num_attention_heads.has_value());
  // Not an object: nothing is typed.
  for (const char* text : {"[]", "3", "null", R"("eos_token_id")"}) {
    EXPECT_FALSE(core::read_hailo_config(json::parse(text)).has_value()) << text;
    EXPECT_EQ(core::hailo_config_json(core::read_hailo_config_keys(json::parse(text))), json::object()) << text;
  }
}

// Integers are read where floats are; the strict reading takes every document
// the "hailo-config" rule accepts.
TEST(HailoConfig, ReadsEveryDocumentTheTypeRuleAccepts) {
  const std::string text = R"({"eos_token_id": 2, "stop_token_id": [2], "chat_template": "x",
      "default_generation_params": {"temperature": 1, "top_p": 0.9, "top_k": 20, "max_new_tokens": 64,
                                    "repetition_penalty": 1.1, "do_sample": false},
      "pre_process_params": {"prefill_input_tokens_count": 8, "mrope_section": [4]}})";
  ASSERT_TRUE(llm2hef::core::hef::check_hailo_config_text(text, "c").empty());
  const auto read = core::read_hailo_config(json::parse(text));
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->default_generation_params->temperature, 1.0);
  EXPECT_EQ(core::hailo_config_json(*read), json::parse(text));  // 1 == 1.0 as JSON values
}

}  // namespace
