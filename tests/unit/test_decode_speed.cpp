// The decode-speed model (issue 36, item 3; docs/decode-speed.md): bytes per
// generated token at each precision, the bandwidth anchored on Qwen2-1.5B,
// and the rows inspect reports. Every expected figure is computed by hand.
#include <gtest/gtest.h>

#include "llm2hef/core/har/precision_plan.hpp"
#include "llm2hef/core/inspect/decode_speed.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace c = llm2hef::core;

TEST(DecodeSpeed, TheAnchorReproducesItsTwoPublicFigures) {
  const c::DecodeSpeed s = c::decode_speed(c::anchor_bytes_per_token());
  EXPECT_DOUBLE_EQ(s.tokens_per_s_low, 6.9);
  EXPECT_DOUBLE_EQ(s.tokens_per_s_high, 9.45);
  const auto [low, high] = c::decode_bandwidth();
  EXPECT_DOUBLE_EQ(low, 6.9 * c::anchor_bytes_per_token());
  EXPECT_DOUBLE_EQ(high, 9.45 * c::anchor_bytes_per_token());
}

TEST(DecodeSpeed, TheAnchorIsQwen2OnePointFiveBAsItsCheckpointCountsIt) {
  const c::DecodeReads r = c::dense_decoder_reads(c::anchor_shape(), c::kAnchorCache);
  // Qwen2-1.5B-Instruct's 1,543,714,304 parameters, the tied embedding
  // counted once (it is the lm_head on the chip).
  EXPECT_DOUBLE_EQ(r.block_weights + r.lm_head_weights, 1543714304.0);
  EXPECT_DOUBLE_EQ(r.lm_head_weights, 151936.0 * 1536);
  EXPECT_DOUBLE_EQ(r.kv_cache_bytes, 2.0 * 28 * 12 * 128 * 2048);  // 176,160,768
  // Hailo's recipe: block convs and lm_head at 4 bits; the cache at 1 byte a
  // value. 655,170,304 + 116,686,848 + 176,160,768 = 948,017,920 bytes.
  EXPECT_DOUBLE_EQ(c::anchor_bytes_per_token(), 1310340608.0 / 2 + 233373696.0 / 2 + 176160768.0);
  EXPECT_DOUBLE_EQ(c::anchor_bytes_per_token(), 948017920.0);
}

TEST(DecodeSpeed, ASmallMadeUpShapeByHand) {
  // hidden 8, 2 layers, 2 heads / 1 KV head x 4, intermediate 16, vocab 10,
  // q/k/v biases, cache 4. Per layer: q 8x8, k 8x4, v 8x4, o 8x8 = 192;
  // biases 8+4+4 = 16; gate, up, down 3x8x16 = 384; two norms 16: 608.
  // Blocks 2 x 608 + the final norm 8 = 1224. lm_head 10x8 = 80.
  // K/V: 2 x 2 layers x 2 heads x 4 x 4 positions = 128 bytes.
  const c::DecodeReads r = c::dense_decoder_reads({8, 2, 2, 1, 4, 16, 10, true}, 4);
  EXPECT_DOUBLE_EQ(r.block_weights, 1224);
  EXPECT_DOUBLE_EQ(r.lm_head_weights, 80);
  EXPECT_DOUBLE_EQ(r.kv_cache_bytes, 128);
  EXPECT_DOUBLE_EQ(c::bytes_per_token(r, 0.5, 0.5), 612 + 40 + 128);
  EXPECT_DOUBLE_EQ(c::bytes_per_token(r, 0.5, 1.0), 612 + 80 + 128);
  EXPECT_DOUBLE_EQ(c::bytes_per_token(r, 1.0, 1.0), 1224 + 80 + 128);
  // Without biases, 16 fewer weights per layer.
  EXPECT_DOUBLE_EQ(c::dense_decoder_reads({8, 2, 2, 1, 4, 16, 10, false}, 4).block_weights, 1224 - 32);

  const nlohmann::json rep = c::decode_speed_report(r, std::nullopt);
  EXPECT_EQ(rep["rows"]["default"]["bytes_per_token"], 780);
  EXPECT_EQ(rep["rows"]["hailo_recipe"]["bytes_per_token"], 780);  // Hailo's lm_head is 4-bit too
  EXPECT_EQ(rep["rows"]["all_8bit"]["bytes_per_token"], 1432);
  EXPECT_FALSE(rep["rows"].contains("plan"));
  const auto [low, high] = c::decode_bandwidth();
  EXPECT_DOUBLE_EQ(rep["rows"]["default"]["tokens_per_s_low"].get<double>(), low / 780);
  EXPECT_DOUBLE_EQ(rep["rows"]["default"]["tokens_per_s_high"].get<double>(), high / 780);
}

TEST(DecodeSpeed, APlansExtraWeightBytesLowerTheEstimateInProportion) {
  const c::DecodeReads r{1000, 200, 300};  // default: 500 + 100 + 300 = 900 bytes
  for (double extra : {0.0, 450.0, 900.0, 2700.0}) {
    const nlohmann::json rep = c::decode_speed_report(r, c::PlanWeights{c::kWeightBytes4Bit, extra});
    const auto& def = rep["rows"]["default"];
    const auto& plan = rep["rows"]["plan"];
    EXPECT_EQ(plan["bytes_per_token"].get<double>(), 900 + extra);
    const double ratio = 900 / (900 + extra);
    EXPECT_DOUBLE_EQ(plan["tokens_per_s_low"].get<double>(), def["tokens_per_s_low"].get<double>() * ratio);
    EXPECT_DOUBLE_EQ(plan["tokens_per_s_high"].get<double>(), def["tokens_per_s_high"].get<double>() * ratio);
  }
  // A plan whose default mode is 8-bit costs what all_8bit costs.
  const nlohmann::json rep = c::decode_speed_report(r, c::PlanWeights{c::weight_bytes_of_mode("a8_w8"), 0});
  EXPECT_EQ(rep["rows"]["plan"]["bytes_per_token"], rep["rows"]["all_8bit"]["bytes_per_token"]);
}

TEST(DecodeSpeed, EightBitWeightsAreSlowerThanTheDefaultAndTheRecipe) {
  for (const c::DecodeReads& r :
       {c::dense_decoder_reads(c::anchor_shape(), 2048),
        c::dense_decoder_reads({576, 30, 9, 3, 64, 1536, 49152, false}, 2048), c::DecodeReads{10, 1, 0}}) {
    const nlohmann::json rows = c::decode_speed_report(r, std::nullopt)["rows"];
    const double def = rows["default"]["tokens_per_s_high"], recipe = rows["hailo_recipe"]["tokens_per_s_high"],
                 all8 = rows["all_8bit"]["tokens_per_s_high"];
    EXPECT_LT(all8, def);
    EXPECT_LT(all8, recipe);
    EXPECT_EQ(recipe, def);  // the recipe's weights are all 4-bit, as the default's
    EXPECT_LT(rows["all_8bit"]["tokens_per_s_low"].get<double>(), all8);
  }
}

TEST(DecodeSpeed, EveryModeAPlanMayNameHasAWeightWidth) {
  EXPECT_EQ(c::weight_bytes_of_mode("a8_w4"), 0.5);
  EXPECT_EQ(c::weight_bytes_of_mode("a16_w4_a16"), 0.5);
  EXPECT_EQ(c::weight_bytes_of_mode("a8_w8"), 1.0);
  EXPECT_EQ(c::weight_bytes_of_mode("a16_w8"), 1.0);
  EXPECT_EQ(c::weight_bytes_of_mode("a16_w8_a16"), 1.0);
  EXPECT_EQ(c::weight_bytes_of_mode("a16_w16"), 2.0);
  for (const auto& m : c::har::known_precision_modes()) EXPECT_GT(c::weight_bytes_of_mode(m), 0) << m;
  EXPECT_THROW(c::weight_bytes_of_mode("a8"), llm2hef::InternalError);
  EXPECT_THROW(c::weight_bytes_of_mode("a8_w2"), llm2hef::InternalError);
}

TEST(DecodeSpeed, NoBytesIsABug) {
  EXPECT_THROW(c::decode_speed(0), llm2hef::InternalError);
  EXPECT_THROW(c::decode_speed(-1), llm2hef::InternalError);
}
