// RoPE frequency folding: default, linear, llama3, and refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope.hpp"

using namespace llm2hef;
using namespace llm2hef::sdk;
using nlohmann::json;

namespace {

std::vector<float> inv_for(const json& config, int64_t head_dim = 16) {
  std::vector<std::string> rewrites;
  return rope_inv_freq(JsonFile("config.json", config), head_dim, rewrites);
}

}  // namespace

TEST(Rope, DefaultFollowsTheBaseAndTheHeadDim) {
  auto inv = inv_for({{"rope_theta", 10000.0}});
  ASSERT_EQ(inv.size(), 8u);
  EXPECT_EQ(inv[0], 1.0f);
  EXPECT_NEAR(inv[4], 1.0 / std::pow(10000.0, 8.0 / 16.0), 1e-9);
  // v5 spelling and the 10000 default
  EXPECT_EQ(inv_for({{"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}}), inv);
  EXPECT_EQ(inv_for(json::object()), inv);
}

TEST(Rope, LinearScalingDividesEveryFrequency) {
  auto plain = inv_for({{"rope_theta", 10000.0}});
  auto scaled = inv_for({{"rope_theta", 10000.0}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 4.0}}}});
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(scaled[i], plain[i] / 4.0f);
}

TEST(Rope, Llama3KeepsHighDividesLowAndSmoothsTheBand) {
  const json base = {{"rope_theta", 500000.0}};
  json cfg = base;
  cfg["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", 32.0},
                         {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0},
                         {"original_max_position_embeddings", 8192}};
  auto plain = inv_for(base, 64), scaled = inv_for(cfg, 64);
  // docs/architectures.md 1.4, Llama-3.2-1B: j=0..14 unchanged, 15..17 smoothed, 18..31 divided by 32.
  for (int j = 0; j <= 14; ++j) EXPECT_EQ(scaled[static_cast<size_t>(j)], plain[static_cast<size_t>(j)]) << j;
  EXPECT_NEAR(scaled[15], 1.290548e-3, 1e-8);
  EXPECT_NEAR(scaled[16], 4.295568e-4, 1e-9);
  EXPECT_NEAR(scaled[17], 9.708288e-5, 1e-10);
  for (int j = 18; j < 32; ++j) EXPECT_EQ(scaled[static_cast<size_t>(j)], plain[static_cast<size_t>(j)] / 32.0f) << j;
}

TEST(Rope, OtherRopeTypesAreRefusedNamingTheField) {
  try {
    inv_for({{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}});
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: field 'rope_scaling'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'yarn'"), std::string::npos);
  }
  EXPECT_THROW(inv_for({{"partial_rotary_factor", 0.5}}), Unsupported);
  EXPECT_THROW(inv_for({{"rope_scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}}}), BadInput);  // missing keys
}

// Found while writing fuzz_checkpoint_json: non-string rope types and a non-number
// rope_theta inside rope_parameters ended `export` with json's type_error.
TEST(Rope, WrongJsonTypesAreRefusedNamingTheField) {
  for (const json& config :
       {json{{"rope_scaling", {{"rope_type", 3}}}}, json{{"rope_scaling", {{"type", json::array()}}}},
        json{{"rope_parameters", {{"rope_theta", "1e4"}}}}}) {
    try {
      inv_for(config);
      FAIL() << config.dump();
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find("config.json: field 'rope_"), std::string::npos) << e.what();
    }
  }
}
