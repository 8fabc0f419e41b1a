// Partial rotary and longrope building blocks (sdk/partial_rotary.hpp,
// families/longrope.hpp): HF's precedence of the rope keys, the truncated rotary
// width, the theta layout, longrope's factors, attention factor and cache limit.
#include <gtest/gtest.h>

#include <cmath>

#include "llm2hef/families/longrope.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/partial_rotary.hpp"

using namespace llm2hef;
using namespace llm2hef::sdk;
using namespace llm2hef::families;
using nlohmann::json;

namespace {

JsonFile cfg(const json& j) { return JsonFile("config.json", j); }

}  // namespace

TEST(PartialRotary, RopeDictWinsThenTopLevelThenAliasThenDefault) {
  const RopeKeys neox{.default_factor = 0.25, .factor_alias = "rotary_pct", .base_alias = "rotary_emb_base"};
  auto settled = [&](const json& j) {
    const JsonFile c = resolve_rope_keys(cfg(j), neox);
    return std::pair{c.get_number("rope_theta"), c.get_number("partial_rotary_factor")};
  };
  EXPECT_EQ(settled(json::object()), (std::pair{10000.0, 0.25}));
  EXPECT_EQ(settled({{"rotary_pct", 0.5}, {"rotary_emb_base", 5000}}), (std::pair{5000.0, 0.5}));
  EXPECT_EQ(settled({{"partial_rotary_factor", 0.4}, {"rotary_pct", 0.5}}), (std::pair{10000.0, 0.4}));
  EXPECT_EQ(settled({{"rotary_pct", 0.5}, {"rope_parameters", {{"partial_rotary_factor", 0.75}, {"rope_theta", 7.0}}}}),
            (std::pair{7.0, 0.75}));
}

TEST(PartialRotary, WidthIsTruncatedAndMustBeEven) {
  EXPECT_EQ(rotary_dims(cfg({{"partial_rotary_factor", 0.4}}), 80), 32);               // Phi-2
  EXPECT_EQ(rotary_dims(cfg({{"partial_rotary_factor", 0.75}}), 128), 96);             // Phi-4-mini
  EXPECT_EQ(rotary_dims(cfg({{"partial_rotary_factor", 0.3}}), 16), 4);                // int(4.8)
  EXPECT_THROW(rotary_dims(cfg({{"partial_rotary_factor", 0.35}}), 16), Unsupported);  // int(5.6) = 5
  EXPECT_THROW(rotary_dims(cfg({{"partial_rotary_factor", 1.5}}), 16), BadInput);
}

TEST(PartialRotary, ThetaIsInvFreqTwiceThenZeros) {
  std::vector<std::string> rewrites;
  const PartialRope r = read_partial_rope(cfg({{"partial_rotary_factor", 0.5}}), 16, {}, rewrites);
  ASSERT_EQ(r.rotary_dim, 8);
  ASSERT_EQ(r.inv_freq.size(), 4u);
  EXPECT_NEAR(r.inv_freq[1], 1.0 / std::pow(10000.0, 2.0 / 8.0), 1e-7);  // over rotary_dim, not head_dim
  ASSERT_EQ(r.theta.size(), 16u);
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(r.theta[j], r.inv_freq[j]);
    EXPECT_EQ(r.theta[j + 4], r.inv_freq[j]);
  }
  for (size_t j = 8; j < 16; ++j) EXPECT_EQ(r.theta[j], 0.0f);
}

TEST(LongRope, ShortFactorsAndTheAttentionFactor) {
  const json j = {{"rope_theta", 10000.0},
                  {"max_position_embeddings", 256},
                  {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0, 2.0}}, {"long_factor", {3.0, 4.0}}}}};
  const LongRope r = longrope_inv_freq(cfg(j), 4, 64);
  ASSERT_EQ(r.inv_freq.size(), 2u);
  EXPECT_EQ(r.inv_freq[0], 1.0f);
  EXPECT_NEAR(r.inv_freq[1], 1.0 / (2.0 * 100.0), 1e-9);
  EXPECT_NEAR(r.attention_factor, std::sqrt(1.0 + std::log(4.0) / std::log(64.0)), 1e-6);
}

// Distinct factor lists: exact only up to original_max, which the result
// names (the decoder adapter refuses beyond it and defaults to it); equal
// lists: no limit of their own.
TEST(LongRope, OriginalIsTheLargestExactCacheUnlessTheFactorsAgree) {
  json j = {{"rope_theta", 10000.0},
            {"max_position_embeddings", 256},
            {"rope_scaling", {{"type", "longrope"}, {"short_factor", {1.0, 2.0}}, {"long_factor", {3.0, 4.0}}}}};
  const LongRope distinct = longrope_inv_freq(cfg(j), 4, 64);
  EXPECT_EQ(distinct.largest_exact_cache, 64);
  EXPECT_NE(distinct.largest_exact_cache_reason.find("original_max_position_embeddings 64"), std::string::npos)
      << distinct.largest_exact_cache_reason;
  EXPECT_NE(distinct.largest_exact_cache_reason.find("rope_scaling"), std::string::npos)
      << distinct.largest_exact_cache_reason;
  j["rope_scaling"]["long_factor"] = {1.0, 2.0};
  const LongRope equal = longrope_inv_freq(cfg(j), 4, 64);
  EXPECT_EQ(equal.largest_exact_cache, 0);
  EXPECT_EQ(equal.largest_exact_cache_reason, "");
  j["rope_scaling"]["attention_factor"] = 1.5;
  EXPECT_FLOAT_EQ(longrope_inv_freq(cfg(j), 4, 64).attention_factor, 1.5f);
  j["rope_scaling"]["short_factor"] = {1.0};
  EXPECT_THROW(longrope_inv_freq(cfg(j), 4, 64), BadInput);
}
