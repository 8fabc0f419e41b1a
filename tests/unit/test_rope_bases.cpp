// Several RoPE bases in one theta vector (Gemma 3's local and global bases).
#include <gtest/gtest.h>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/rope_bases.hpp"

using namespace llm2hef;
using namespace llm2hef::sdk;

TEST(RopeBases, EachBaseTwiceSideBySide) {
  const std::vector<float> local = {1.0f, 0.1f}, global = {1.0f, 0.001f};
  const std::vector<float> theta = rope_bases_theta({local, global});
  // HF's rotate-half layout per base, local first: T = bases * head_dim, even.
  EXPECT_EQ(theta, (std::vector<float>{1.0f, 0.1f, 1.0f, 0.1f, 1.0f, 0.001f, 1.0f, 0.001f}));
  EXPECT_EQ(rope_bases_theta({local}), (std::vector<float>{1.0f, 0.1f, 1.0f, 0.1f}));
}

TEST(RopeBases, BasesOfDifferentWidthsAreAnInternalError) {
  EXPECT_THROW(rope_bases_theta({{1.0f, 0.1f}, {1.0f}}), InternalError);
}
