// python_literal: the one escaping rule for values written into generated
// Python (issue 41, item 1). Hostile strings come back as literals of
// printable ASCII whose value, read by Python, is the string itself.
#include <gtest/gtest.h>

#include <string>

#include "llm2hef/core/dfc/python_literal.hpp"

using llm2hef::core::python_literal;

namespace {

bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

}  // namespace

TEST(PythonLiteral, PlainTextIsQuotedAsItIs) {
  EXPECT_EQ(python_literal("SmolLM2-135M-Instruct"), "\"SmolLM2-135M-Instruct\"");
  EXPECT_EQ(python_literal(""), "\"\"");
}

TEST(PythonLiteral, NothingEndsTheLiteralOrTheLine) {
  EXPECT_EQ(python_literal("a\nimport os\r\n#"), "\"a\\nimport os\\r\\n#\"");
  EXPECT_EQ(python_literal("say \"hi\" \\ bye"), "\"say \\\"hi\\\" \\\\ bye\"");
  EXPECT_EQ(python_literal(std::string("nul\0end", 7)), "\"nul\\x00end\"");
  EXPECT_EQ(python_literal("\x1b[2J\x7f\f\v"), "\"\\x1b[2J\\x7f\\x0c\\x0b\"");
}

TEST(PythonLiteral, UnicodeIsEscapedByCodePoint) {
  EXPECT_EQ(python_literal("caf\xc3\xa9"), "\"caf\\xe9\"");          // U+00E9
  EXPECT_EQ(python_literal("\xe2\x80\xa8"), "\"\\u2028\"");          // LINE SEPARATOR
  EXPECT_EQ(python_literal("\xf0\x9f\x98\x80"), "\"\\U0001f600\"");  // one code point, not a surrogate pair
  EXPECT_EQ(python_literal("\xef\xbb\xbf"), "\"\\ufeff\"");
}

TEST(PythonLiteral, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(python_literal("a\xff"
                           "b"),
            "\"a\\ufffdb\"");
  EXPECT_EQ(python_literal("\xc0\x8a"), "\"\\ufffd\\ufffd\"");                        // overlong newline
  EXPECT_EQ(python_literal("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");             // a surrogate
  EXPECT_EQ(python_literal("\xe2\x80"), "\"\\ufffd\\ufffd\"");                        // cut short
  EXPECT_EQ(python_literal("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");  // past U+10FFFF
}

TEST(PythonLiteral, EveryByteValueGivesPrintableAscii) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  const std::string lit = python_literal(all);
  EXPECT_TRUE(printable_ascii(lit)) << lit;
  EXPECT_EQ(lit.front(), '"');
  EXPECT_EQ(lit.back(), '"');
}
