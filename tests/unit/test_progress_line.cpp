// The progress bar's text: rate and time left (issue 28, section 4 item 5).
#include <gtest/gtest.h>

#include "llm2hef/core/io/progress.hpp"

using llm2hef::core::progress_line;

TEST(ProgressLine, ShowsRateAndTimeLeft) {
  // 50 MB of 200 MB in 10 s: 5 MB/s, 150 MB left = 30 s.
  const std::string line = progress_line("exporting m", 50'000'000, 200'000'000, 10.0);
  EXPECT_NE(line.find(" 25%"), std::string::npos) << line;
  EXPECT_NE(line.find("50.0/200.0 MB"), std::string::npos) << line;
  EXPECT_NE(line.find("5.0 MB/s"), std::string::npos) << line;
  EXPECT_NE(line.find("30s left"), std::string::npos) << line;
}

TEST(ProgressLine, MinutesAndHoursLeft) {
  EXPECT_NE(progress_line("x", 1'000'000, 200'000'000, 1.0).find("3m19s left"), std::string::npos);
  EXPECT_NE(progress_line("x", 1'000'000, 8'000'000'000, 1.0).find("2h13m left"), std::string::npos);
}

TEST(ProgressLine, NoRateBeforeAnyProgress) {
  const std::string line = progress_line("x", 0, 100, 5.0);
  EXPECT_EQ(line.find("MB/s"), std::string::npos) << line;
  EXPECT_EQ(line.find("left"), std::string::npos) << line;
}

TEST(ProgressLine, FinishedShowsTheTimeTaken) {
  const std::string line = progress_line("x", 100'000'000, 100'000'000, 4.0);
  EXPECT_NE(line.find("100%"), std::string::npos) << line;
  EXPECT_NE(line.find("25.0 MB/s, 4s"), std::string::npos) << line;
  EXPECT_EQ(line.find("left"), std::string::npos) << line;
}
