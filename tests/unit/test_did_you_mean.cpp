// The suggestion helper of the command line (core/cli/did_you_mean.cpp):
// distances worked out by hand, and which typos are near enough to suggest.
#include <gtest/gtest.h>

#include "did_you_mean.hpp"

using llm2hef::cli::closest_name;
using llm2hef::cli::edit_distance;

TEST(EditDistance, CountsInsertDeleteSubstituteAndSwap) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("cache", "cache"), 0u);
  EXPECT_EQ(edit_distance("cahce", "cache"), 1u);     // neighbours swapped
  EXPECT_EQ(edit_distance("verbos", "verbose"), 1u);  // one missing
  EXPECT_EQ(edit_distance("forse", "force"), 1u);     // one substituted
  EXPECT_EQ(edit_distance("jsonn", "json"), 1u);      // one extra
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("ca", "abc"), 3u);  // optimal string alignment: no edit of a swapped pair
}

TEST(ClosestName, SuggestsOnlyNearMisses) {
  const std::vector<std::string> flags = {"--cache", "--prefill", "--force", "--json", "--verbose"};
  EXPECT_EQ(closest_name("--cahce", flags), "--cache");
  EXPECT_EQ(closest_name("--prefil", flags), "--prefill");
  EXPECT_EQ(closest_name("--verbos", flags), "--verbose");
  EXPECT_EQ(closest_name("--colour", flags), std::nullopt);
  EXPECT_EQ(closest_name("--gelu", flags), std::nullopt);
  EXPECT_EQ(closest_name("anything", {}), std::nullopt);
}

TEST(ClosestName, ShortNamesNeedACloserMatch) {
  // Two edits are allowed only from six characters on, and never as many
  // edits as there are characters, dashes not counted: "-q" is no typo of "-h".
  EXPECT_EQ(closest_name("-q", {"-h", "--json"}), std::nullopt);
  EXPECT_EQ(closest_name("q", {"o"}), std::nullopt);
  EXPECT_EQ(closest_name("--js", {"--json"}), std::nullopt);  // two edits, two characters
  EXPECT_EQ(closest_name("--jsn", {"--json"}), "--json");
  EXPECT_EQ(closest_name("exprt", {"export"}), "export");
  EXPECT_EQ(closest_name("xport", {"inspect", "export"}), "export");
  EXPECT_EQ(closest_name("epxrot", {"export"}), "export");  // two swaps, six characters
  EXPECT_EQ(closest_name("fxi", {"inspect", "fix", "lines"}), "fix");
  EXPECT_EQ(closest_name("fox", {"fix", "for"}), "fix");  // a tie goes to the first
}
