// tokenizer.json fixes, chat template BOS handling and hailo-config keys.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "llm2hef/core/export/make_hailo_config.hpp"
#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A checkpoint with only JSON files, enough for resource generation.
class JsonOnlyCheckpoint : public sdk::Checkpoint {
 public:
  JsonOnlyCheckpoint(json config, json gen, json tok_cfg)
      : config_("config.json", std::move(config)),
        gen_("generation_config.json", std::move(gen)),
        tok_("tokenizer_config.json", std::move(tok_cfg)) {}
  const fs::path& dir() const override { return dir_; }
  const sdk::JsonFile& config() const override { return config_; }
  const sdk::JsonFile& generation_config() const override { return gen_; }
  const sdk::JsonFile& tokenizer_config() const override { return tok_; }
  fs::path tokenizer_json() const override { return {}; }
  bool has(std::string_view) const override { return false; }
  const sdk::TensorInfo& info(std::string_view t) const override { throw BadInput(std::string(t)); }
  std::vector<std::string> tensor_names() const override { return {}; }
  void read_rows(std::string_view, int64_t, int64_t, std::span<float>) const override {}

 private:
  fs::path dir_ = "ckpt";
  sdk::JsonFile config_, gen_, tok_;
};

json llama_like_tokenizer() {
  return json::parse(R"({
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "<s>": 2}},
    "added_tokens": [{"id": 2, "content": "<s>"}, {"id": 3, "content": "<think>"}, {"id": 4, "content": "</think>"}],
    "decoder": {"type": "Sequence", "decoders": [{"type": "Replace"}, {"type": "ByteFallback"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]}
  })");
}

sdk::Plan plan_with(int64_t n, int64_t p, int64_t heads, int64_t kv) {
  sdk::Plan plan;
  plan.cache_size = n;
  plan.prefill = p;
  plan.dims.heads = heads;
  plan.dims.kv_heads = kv;
  plan.dims.vocab = 1000;  // ids in these tests are small
  plan.pe_q_tiles = heads;
  plan.pe_k_tiles = kv;
  return plan;
}

}  // namespace

TEST(Tokenizer, StripStepsRemovedAndBosDetected) {
  auto fix = core::fix_tokenizer(llama_like_tokenizer(), "tokenizer.json", 10);
  const auto& steps = fix.tokenizer["decoder"]["decoders"];
  EXPECT_EQ(steps.size(), 2u);
  for (const auto& s : steps) EXPECT_NE(s["type"], "Strip");
  ASSERT_TRUE(fix.bos.has_value());
  EXPECT_EQ(*fix.bos, "<s>");
  EXPECT_EQ(fix.changes.size(), 1u);
}

TEST(Tokenizer, TopLevelStripDecoderRemoved) {
  json t = llama_like_tokenizer();
  t["decoder"] = {{"type", "Strip"}};
  auto fix = core::fix_tokenizer(t, "tokenizer.json", 10);
  EXPECT_TRUE(fix.tokenizer["decoder"].is_null());
}

TEST(Tokenizer, IdsBeyondVocabularyRefusedWithFileAndToken) {
  try {
    core::fix_tokenizer(llama_like_tokenizer(), "dir/tokenizer.json", 4);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("dir/tokenizer.json"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("</think>"), std::string::npos);
  }
}

TEST(Tokenizer, NotATokenizerRefused) {
  EXPECT_THROW(core::fix_tokenizer(json::parse(R"({"version": "1.0"})"), "t.json", 10), BadInput);
}

TEST(ChatTemplate, BosMadeLiteralAndPrepended) {
  JsonOnlyCheckpoint ck({}, {},
                        {{"chat_template", "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"}});
  std::vector<std::string> changes;
  std::string t = core::chat_template_for_runtime(ck, std::string("<s>"), changes);
  // Printed as a string literal, never spliced in as template source (issue 41, item 6).
  EXPECT_EQ(t.rfind("{{ '<s>' }}{% for", 0), 0u);
  EXPECT_EQ(t.find("bos_token"), std::string::npos);

  JsonOnlyCheckpoint ck2({}, {}, {{"chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}"}});
  t = core::chat_template_for_runtime(ck2, std::string("<s>"), changes);
  EXPECT_EQ(t.rfind("{{ '<s>' }}{% for", 0), 0u);
}

// Llama 3's original template adds the BOS through the variable, which the
// runtime does not define: it must come out literal, once, at the start.
TEST(ChatTemplate, BosVariableInsideExpressionsBecomesOneLiteralPrefix) {
  JsonOnlyCheckpoint ck({}, {},
                        {{"bos_token", "<|begin_of_text|>"},
                         {"chat_template",
                          "{% for m in messages %}{% set c = m['content'] %}"
                          "{% if loop.index0 == 0 %}{% set c = bos_token + c %}{% endif %}"
                          "{{ c }}{% endfor %}"}});
  std::vector<std::string> changes;
  std::string t = core::chat_template_for_runtime(ck, std::nullopt, changes);
  EXPECT_EQ(t.rfind("{{ '<|begin_of_text|>' }}{% for", 0), 0u);
  EXPECT_EQ(t.find("bos_token"), std::string::npos);
  EXPECT_EQ(t.find("<|begin_of_text|>", 5), std::string::npos);  // exactly once
  EXPECT_NE(t.find("{% set c = '' + c %}"), std::string::npos);
}

TEST(ChatTemplate, BaseModelGetsPassThroughTemplate) {
  JsonOnlyCheckpoint ck({}, {}, {});
  std::vector<std::string> changes;
  std::string t = core::chat_template_for_runtime(ck, std::nullopt, changes);
  EXPECT_NE(t.find("message['content']"), std::string::npos);
  EXPECT_EQ(changes.size(), 1u);
}

TEST(HailoConfig, EveryRuntimeKeyFromTheCheckpoint) {
  JsonOnlyCheckpoint ck({{"eos_token_id", 9}},
                        {{"eos_token_id", json::array({7, 8})},
                         {"temperature", 0.6},
                         {"top_p", 0.9},
                         {"do_sample", true}},
                        {{"chat_template", "x"}});
  auto fix = core::fix_tokenizer(llama_like_tokenizer(), "tokenizer.json", 10);
  std::vector<std::string> changes;
  json cfg = core::make_hailo_config(ck, plan_with(64, 16, 6, 2), fix, changes);
  EXPECT_EQ(cfg["eos_token_id"], 7);  // generation_config wins over config
  EXPECT_EQ(cfg["stop_token_id"], json::array({7, 8}));
  EXPECT_EQ(cfg["begin_of_reasoning_token_id"], 3);
  EXPECT_EQ(cfg["end_of_reasoning_token_id"], 4);
  EXPECT_EQ(cfg["default_generation_params"]["temperature"], 0.6);
  EXPECT_EQ(cfg["default_generation_params"]["do_sample"], true);
  const json& pp = cfg["pre_process_params"];
  EXPECT_EQ(pp["kv_cache_size"], 64);
  EXPECT_EQ(pp["prefill_input_tokens_count"], 16);
  EXPECT_FALSE(pp.contains("prefill_input_tokens_size"));
  EXPECT_EQ(pp["num_attention_heads"], 6);
  EXPECT_EQ(pp["num_key_value_heads"], 2);
  const json& sfx = cfg["input_layers_names_suffixes"];
  EXPECT_EQ(sfx["embeddings"], "input_layer1");
  EXPECT_EQ(sfx["attention_mask"], "input_layer2");
  EXPECT_EQ(sfx["pe_q_cos"], "input_layer3");
  EXPECT_EQ(sfx["pe_q_sin"], "input_layer4");
  EXPECT_EQ(sfx["pe_k_cos"], "input_layer5");
  EXPECT_EQ(sfx["pe_k_sin"], "input_layer6");
  EXPECT_EQ(cfg["chat_template"], "{{ '<s>' }}x");
}

TEST(HailoConfig, MissingEosIsAClearError) {
  JsonOnlyCheckpoint ck({}, {}, {});
  auto fix = core::fix_tokenizer(llama_like_tokenizer(), "tokenizer.json", 10);
  std::vector<std::string> changes;
  try {
    core::make_hailo_config(ck, plan_with(8, 4, 1, 1), fix, changes);
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("eos_token_id"), std::string::npos);
  }
}

// Found while writing fuzz_checkpoint_json: fields of the wrong JSON type ended `export`
// with json's own type_error (exit 5, naming neither file nor field).
TEST(Tokenizer, WrongTypesRefusedNamingTheFileAndField) {
  auto expect_bad_input = [](const json& tok, const std::string& field) {
    try {
      core::fix_tokenizer(tok, "dir/tokenizer.json", 10);
      FAIL() << "expected BadInput for " << tok.dump();
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("dir/tokenizer.json: field '" + field + "'"), std::string::npos) << e.what();
    }
  };
  json tok = llama_like_tokenizer();
  tok["added_tokens"][0]["content"] = 5;
  expect_bad_input(tok, "added_tokens");
  tok = llama_like_tokenizer();
  tok["added_tokens"][0]["id"] = -1;
  expect_bad_input(tok, "added_tokens");
  // A component whose `type` is not a string is not a Strip or a Sequence.
  tok = llama_like_tokenizer();
  tok["decoder"]["decoders"][2]["type"] = 1;
  tok["post_processor"]["type"] = json::array();
  EXPECT_EQ(core::fix_tokenizer(tok, "t.json", 10).changes.size(), 0u);
  EXPECT_FALSE(core::fix_tokenizer(tok, "t.json", 10).bos);
  tok["decoder"] = {{"type", nullptr}};
  EXPECT_EQ(core::fix_tokenizer(tok, "t.json", 10).changes.size(), 0u);
}

TEST(HailoConfig, EosTokenWithoutTextContentIsNotAnId) {
  JsonOnlyCheckpoint ck({}, {}, {{"eos_token", {{"content", 3}}}});
  auto fix = core::fix_tokenizer(llama_like_tokenizer(), "tokenizer.json", 10);
  std::vector<std::string> changes;
  EXPECT_THROW(core::make_hailo_config(ck, plan_with(8, 4, 1, 1), fix, changes), BadInput);
}
