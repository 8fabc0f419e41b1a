// The arguments `llm2hef calibrate` checks before it starts Python: the
// precision budget's byte sizes and the token-id files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "llm2hef/core/dfc/calibrate_args.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using llm2hef::core::check_token_sequences;
using llm2hef::core::parse_byte_size;

TEST(ParseByteSize, PlainAndUnits) {
  EXPECT_EQ(parse_byte_size("1500000", "--b"), 1500000);
  EXPECT_EQ(parse_byte_size("512MiB", "--b"), 512LL << 20);
  EXPECT_EQ(parse_byte_size("1.5GB", "--b"), 1500000000LL);
  EXPECT_EQ(parse_byte_size("64 KiB", "--b"), 65536);
  EXPECT_EQ(parse_byte_size("0", "--b"), 0);
}

TEST(ParseByteSize, RefusesWhatIsNotASize) {
  for (const char* bad : {"", "MiB", "12XB", "-1", "1e30", "nan", "1.5 GiBs"}) {
    try {
      parse_byte_size(bad, "--precision-budget");
      ADD_FAILURE() << bad;
    } catch (const llm2hef::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--precision-budget"), std::string::npos) << e.what();
    }
  }
}

class TokenFile : public ::testing::Test {
 protected:
  llm2hef::testing::TempDir dir_;
  const fs::path path = dir_ / "tokens.json";
  void write(const std::string& text) { std::ofstream(path) << text; }
  std::string error_of(int64_t vocab) {
    try {
      check_token_sequences(path, vocab);
    } catch (const llm2hef::BadInput& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(TokenFile, CountsNonEmptySequences) {
  write("[[1, 2, 3], [], [0]]");
  EXPECT_EQ(check_token_sequences(path, 10), 2u);
}

TEST_F(TokenFile, NamesTheFileAndTheBadEntry) {
  write("[[1, 2], [3, 10]]");
  const std::string e = error_of(10);
  EXPECT_NE(e.find(path.string()), std::string::npos) << e;
  EXPECT_NE(e.find("sequence 1, position 1"), std::string::npos) << e;
  write("[[1, 2.5]]");
  EXPECT_NE(error_of(10).find("sequence 0, position 1: 2.5"), std::string::npos);
  write("[[1], \"text\"]");
  EXPECT_NE(error_of(10).find("entry 1 is string"), std::string::npos);
  write("{\"a\": 1}");
  EXPECT_NE(error_of(10).find("expected a JSON list"), std::string::npos);
  write("[[], []]");
  EXPECT_NE(error_of(10).find("no token ids"), std::string::npos);
  write("[[1, 2");
  EXPECT_NE(error_of(10).find(path.string()), std::string::npos);
}

// Checked as it is parsed: every shape but a list of lists of integers is
// refused where it appears, naming the entry, however deep it would nest.
TEST_F(TokenFile, RefusesOtherShapesWhereTheyAppear) {
  write("[[1, [2]]]");
  EXPECT_NE(error_of(10).find("sequence 0, position 1: a list is not a token id"), std::string::npos) << error_of(10);
  write("[[1], {\"a\": [1]}]");
  EXPECT_NE(error_of(10).find("entry 1 is object"), std::string::npos) << error_of(10);
  write("[[1], [true]]");
  EXPECT_NE(error_of(10).find("sequence 1, position 0: true"), std::string::npos) << error_of(10);
  write("[[-1]]");
  EXPECT_NE(error_of(10).find("sequence 0, position 0: -1"), std::string::npos) << error_of(10);
  write("[[18446744073709551615]]");
  EXPECT_NE(error_of(10).find("sequence 0, position 0: 18446744073709551615"), std::string::npos) << error_of(10);
  write("[[2.5e3]]");
  EXPECT_NE(error_of(10).find("sequence 0, position 0: 2.5e3 is not a token id"), std::string::npos) << error_of(10);
  write("7");
  EXPECT_NE(error_of(10).find("found number"), std::string::npos) << error_of(10);
  write(std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(error_of(10).find("sequence 0, position 0: a list"), std::string::npos);
  write("[[1]] [[2]]");
  EXPECT_NE(error_of(10).find("not valid JSON"), std::string::npos) << error_of(10);
  write(std::string("[[1]]\0", 6));
  EXPECT_NE(error_of(10).find("a NUL byte at offset 5"), std::string::npos) << error_of(10);
  write("");
  EXPECT_NE(error_of(10).find("not valid JSON"), std::string::npos) << error_of(10);
}
