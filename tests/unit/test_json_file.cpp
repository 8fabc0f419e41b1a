// sdk::JsonFile's typed accessors on values a config can hold but an int64
// cannot.
#include <gtest/gtest.h>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

using namespace llm2hef;
using nlohmann::json;

namespace {

sdk::JsonFile config(const char* text) { return sdk::JsonFile("config.json", json::parse(text)); }

void expect_refused(const char* text) {
  try {
    config(text).find_int("hidden_size");
    FAIL() << "expected BadInput for " << text;
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: field 'hidden_size'"), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(JsonFile, WholeFloatsAreIntegers) {
  EXPECT_EQ(config(R"({"hidden_size": 64.0})").find_int("hidden_size"), 64);
  EXPECT_EQ(config(R"({"hidden_size": -2.0})").find_int("hidden_size"), -2);
  expect_refused(R"({"hidden_size": 64.5})");
}

// Found by fuzz_checkpoint_json: a float beyond int64 (here 1e100) was cast
// to int64, which is undefined behaviour (the sanitizer build aborts); an
// unsigned beyond int64 came back wrapped to a negative number.
TEST(JsonFile, NumbersBeyondInt64AreRefusedNamingTheField) {
  expect_refused(R"({"hidden_size": 1e100})");
  expect_refused(R"({"hidden_size": -1e100})");
  expect_refused(R"({"hidden_size": 9223372036854775808.0})");
  expect_refused(R"({"hidden_size": 18446744073709551615})");
  EXPECT_EQ(config(R"({"hidden_size": 9223372036854775807})").find_int("hidden_size"), INT64_MAX);
}
