// Two SDK pieces of the Llama-family reading: the sliding-window policy
// (sdk/sliding_window.hpp: transformers' per-family rules for which layers
// slide; exact when --cache <= window, refused beyond) and Granite's scalar
// multipliers (families/scalar_multipliers.hpp: what is read, where it goes).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "llm2hef/families/scalar_multipliers.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/sliding_window.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;

JsonFile config(const char* text) { return JsonFile("cfg/config.json", nlohmann::json::parse(text)); }

std::vector<bool> layers(const SlidingWindow& w) { return w.layers; }

TEST(SlidingWindow, NullAbsentOrDisabledMeansNoWindow) {
  EXPECT_FALSE(read_sliding_window(config(R"({})"), 2).any());
  EXPECT_FALSE(read_sliding_window(config(R"({"sliding_window": null})"), 2).any());
  EXPECT_FALSE(read_sliding_window(config(R"({"sliding_window": 16, "use_sliding_window": false})"), 2).any());
}

TEST(SlidingWindow, MistralEveryLayer) {
  const SlidingWindow w = read_sliding_window(config(R"({"sliding_window": 4096})"), 3);
  EXPECT_EQ(w.window, 4096);
  EXPECT_EQ(layers(w), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(w.layer_list(), "all 3 layers");
}

TEST(SlidingWindow, Qwen2MaxWindowLayersAndLayerTypes) {
  SlidingWindow w =
      read_sliding_window(config(R"({"sliding_window": 16, "use_sliding_window": true, "max_window_layers": 2})"), 4);
  EXPECT_EQ(layers(w), (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(w.layer_list(), "layers 2,3");
  w = read_sliding_window(config(R"({"sliding_window": 16, "use_sliding_window": true, "max_window_layers": 0,
                                     "layer_types": ["full_attention", "sliding_attention"]})"),
                          2);
  EXPECT_EQ(layers(w), (std::vector<bool>{false, true}));
}

TEST(SlidingWindow, MalformedIsBadInput) {
  EXPECT_THROW(read_sliding_window(config(R"({"sliding_window": 0})"), 2), llm2hef::BadInput);
  EXPECT_THROW(read_sliding_window(config(R"({"sliding_window": 8, "layer_types": ["full_attention"]})"), 2),
               llm2hef::BadInput);
}

TEST(SlidingWindow, ExactUpToTheWindowRefusedBeyond) {
  const SlidingWindow w = read_sliding_window(config(R"({"sliding_window": 64})"), 2);
  Plan p;
  ExportOptions o;
  o.cache_size = 64;  // distance 63 < 64: the window cannot bite
  apply_sliding_window(p, o, w);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("exact"), std::string::npos);
  o.cache_size = 65;
  try {
    apply_sliding_window(p, o, w);
    FAIL() << "not refused";
  } catch (const llm2hef::Unsupported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("cfg/config.json: field 'sliding_window': 64"), std::string::npos) << m;
    EXPECT_NE(m.find("--cache 64"), std::string::npos) << m;
  }
}

TEST(ScalarMultipliers, NeutralByDefault) {
  const ScalarMultipliers m;
  EXPECT_FALSE(m.any());
  EXPECT_TRUE(m.rewrites().empty());
  EXPECT_EQ(m.score_divisor(64), 8.0f);
}

TEST(ScalarMultipliers, GraniteReading) {
  const ScalarMultipliers m = read_granite_multipliers(config(
      R"({"embedding_multiplier": 12, "attention_multiplier": 0.015625, "residual_multiplier": 0.22,
          "logits_scaling": 8.0})"));
  EXPECT_EQ(m.embedding, 12.0);
  EXPECT_EQ(m.score_divisor(128), 64.0f);  // the multiplier replaces 1/sqrt(head_dim)
  EXPECT_EQ(m.residual, 0.22);
  EXPECT_EQ(m.logits, 0.125);
  EXPECT_EQ(m.rewrites().size(), 4u);
  // GraniteConfig's defaults: every multiplier 1, so scores are NOT divided by sqrt(head_dim).
  EXPECT_EQ(read_granite_multipliers(config("{}")).score_divisor(64), 1.0f);
  EXPECT_THROW(read_granite_multipliers(config(R"({"logits_scaling": 0})")), llm2hef::BadInput);
  EXPECT_THROW(read_granite_multipliers(config(R"({"residual_multiplier": -1})")), llm2hef::BadInput);
}

}  // namespace
