// sdk::parse_json: the one JSON reader (issue 12, class 4: deep nesting).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace {

using llm2hef::BadInput;
using llm2hef::sdk::JsonLimits;
using llm2hef::sdk::parse_json;

std::string message_of(const std::string& text, const JsonLimits& limits = {}) {
  try {
    parse_json(text, "f.json", limits);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(BoundedJson, ParsesOrdinaryDocuments) {
  const auto doc = parse_json(R"({"a": [1, 2.5, "x", null, true], "b": {"c": {}}})", "f.json");
  EXPECT_EQ(doc["a"][1].get<double>(), 2.5);
  EXPECT_TRUE(doc["b"]["c"].is_object());
}

// A million open brackets would overflow the stack when the document is
// destroyed or walked; it is refused while parsing, naming the file.
TEST(BoundedJson, DeepNestingIsRefusedNotACrash) {
  for (const char* open : {"[", "{\"k\":"}) {
    std::string deep;
    for (int i = 0; i < 1000000; ++i) deep += open;
    const std::string msg = message_of(deep);
    EXPECT_NE(msg.find("f.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
  }
}

TEST(BoundedJson, DepthLimitIsExact) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_NO_THROW(parse_json("[[[1]]]", "f.json", limits));
  EXPECT_NE(message_of("[[[[1]]]]", limits).find("more than 3 levels"), std::string::npos);
  EXPECT_NE(message_of(R"({"a": {"b": [[1]]}})", limits).find("in 'a'/'b'"), std::string::npos);
}

TEST(BoundedJson, DuplicateKeysOnlyWhenAsked) {
  EXPECT_EQ(parse_json(R"({"a": 1, "a": 2})", "f.json")["a"], 2);  // nlohmann's default: the last wins
  JsonLimits strict;
  strict.refuse_duplicate_keys = true;
  EXPECT_NE(message_of(R"({"t": {"a": 1, "a": 2}})", strict).find("in 't': key 'a' appears more than once"),
            std::string::npos);
  EXPECT_NO_THROW(parse_json(R"({"t": {"a": 1}, "u": {"a": 2}})", "f.json", strict));  // per object
}

TEST(BoundedJson, SizeLimitAndSyntaxErrorsNameTheFile) {
  JsonLimits small;
  small.max_bytes = 4;
  EXPECT_NE(message_of("[1, 2, 3]", small).find("exceed the limit of 4 bytes"), std::string::npos);
  EXPECT_NE(message_of("{\"a\": ").find("f.json: not valid JSON"), std::string::npos);
}

}  // namespace
