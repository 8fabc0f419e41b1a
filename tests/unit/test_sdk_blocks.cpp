// SDK building blocks that do not need a checkpoint: position fitting,
// runtime tables, lm_head sharding, broadcasting.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/learned_positions.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

using namespace llm2hef;
using namespace llm2hef::sdk;

namespace {

std::vector<float> random_wpe(int64_t n, int64_t h, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.02f);
  std::vector<float> w(static_cast<size_t>(n * h));
  for (int64_t p = 0; p < n; ++p)
    for (int64_t j = 0; j < h; ++j)  // a smooth part plus noise, like trained position tables
      w[static_cast<size_t>(p * h + j)] = 0.1f * std::sin(0.01f * static_cast<float>(p * (j + 1))) + noise(rng);
  return w;
}

// Reconstructs wpe from the runtime's tables and the fitted coefficients in
// float32, the way the exported graph does.
double graph_reconstruction_error(const FourierPositions& fit, const std::vector<float>& wpe) {
  const int64_t t = static_cast<int64_t>(fit.theta.size()), h = fit.width;
  std::vector<float> c(static_cast<size_t>(t)), s(static_cast<size_t>(t));
  double worst = 0;
  for (int64_t p = 0; p < fit.positions; ++p) {
    runtime_pe_row(fit.theta, p, c, s);
    for (int64_t j = 0; j < h; ++j) {
      float acc = 0;
      for (int64_t k = 0; k < t; ++k)
        acc += c[static_cast<size_t>(k)] * fit.cos_coef[static_cast<size_t>(k * h + j)] +
               s[static_cast<size_t>(k)] * fit.sin_coef[static_cast<size_t>(k * h + j)];
      worst = std::max(worst, std::abs(static_cast<double>(acc) - wpe[static_cast<size_t>(p * h + j)]));
    }
  }
  return worst;
}

}  // namespace

TEST(LearnedPositions, ThetaIsEvenAndFollowsTheFourierGrid) {
  for (int64_t n : {16, 17, 64, 100}) {
    const auto fit = fit_learned_positions(random_wpe(n, 4, 1), n, 4);
    EXPECT_EQ(fit.frequencies, n / 2 + 1);
    EXPECT_EQ(fit.theta.size() % 2, 0u) << n;
    EXPECT_GE(static_cast<int64_t>(fit.theta.size()), fit.frequencies);
    EXPECT_FLOAT_EQ(fit.theta[1], static_cast<float>(2 * M_PI / static_cast<double>(n)));
  }
}

TEST(LearnedPositions, ExactAtSmallCache) {
  const int64_t n = 64, h = 8;
  const auto wpe = random_wpe(n, h, 2);
  const auto fit = fit_learned_positions(wpe, n, h);
  EXPECT_LT(fit.max_abs_error, 1e-7);
  EXPECT_LT(graph_reconstruction_error(fit, wpe), 2e-6);
}

// The figure quoted in docs/gpt2.md: N = 1024, float32 tables.
TEST(LearnedPositions, ExactAtCache1024InFloat32) {
  const int64_t n = 1024, h = 16;
  const auto wpe = random_wpe(n, h, 3);
  const auto fit = fit_learned_positions(wpe, n, h);
  std::printf("N=1024: solved max|err| %.3e, DFT max|err| %.3e, float32 graph max|err| %.3e\n", fit.max_abs_error,
              fit.dft_max_abs_error, graph_reconstruction_error(fit, wpe));
  EXPECT_LT(fit.max_abs_error, 1e-6);
  EXPECT_LT(graph_reconstruction_error(fit, wpe), 1e-5);
  // Solving against the runtime's float32 tables beats the textbook DFT.
  EXPECT_LT(fit.max_abs_error, fit.dft_max_abs_error);
}

TEST(RuntimeTables, ProductRoundedToFloat32First) {
  const std::vector<float> theta = {0.0f, 1e-3f, 0.7853982f};
  std::vector<float> c(3), s(3);
  runtime_pe_row(theta, 1000, c, s);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(s[0], 0.0f);
  const float angle = theta[2] * 1000.0f;
  EXPECT_EQ(c[2], std::cos(angle));
  EXPECT_EQ(s[2], std::sin(angle));
}

TEST(LmHeadShards, Gpt2VocabularyIsTwentyNineEqualShards) {
  std::string why;
  auto shards = choose_lm_head_shards(50257, 0, why);
  ASSERT_EQ(shards.size(), 29u);
  EXPECT_EQ(shards[0], 1733);
  EXPECT_NE(why.find("29 x 1733"), std::string::npos);
}

TEST(LmHeadShards, QwenVocabularyIsFourShardsAsHailosOwnHef) {
  std::string why;
  auto shards = choose_lm_head_shards(151936, 0, why);
  ASSERT_EQ(shards.size(), 4u);
  EXPECT_EQ(shards[0], 37984);
}

TEST(LmHeadShards, SmallVocabularyIsOneOutput) {
  std::string why;
  EXPECT_EQ(choose_lm_head_shards(300, 0, why), std::vector<int64_t>{300});
}

TEST(LmHeadShards, RequestedCountMustDivide) {
  std::string why;
  EXPECT_EQ(choose_lm_head_shards(300, 3, why), (std::vector<int64_t>{100, 100, 100}));
  // A number the user gave that does not divide: a usage error (exit 2)
  // listing the values that do (issue 28).
  try {
    choose_lm_head_shards(300, 7, why);
    ADD_FAILURE() << "7 does not divide 300";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("valid values up to 64: 1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 25, 30, 50, 60"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(choose_lm_head_shards(50257, 2, why), UsageError);
}

TEST(LmHeadShards, NoReasonableEqualSplitIsRefused) {
  std::string why;
  EXPECT_THROW(choose_lm_head_shards(50261, 0, why), Unsupported);               // prime
  EXPECT_EQ(choose_lm_head_shards(50261, 1, why), std::vector<int64_t>{50261});  // explicit choice honoured
}

TEST(Broadcast, NumpyRules) {
  EXPECT_EQ(broadcast_shapes({1, 4, 8, 8}, {1, 1, 8, 8}), (std::vector<int64_t>{1, 4, 8, 8}));
  EXPECT_EQ(broadcast_shapes({2, 3}, {}), (std::vector<int64_t>{2, 3}));
  EXPECT_THROW(broadcast_shapes({2, 3}, {4}), InternalError);
}
