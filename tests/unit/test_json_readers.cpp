// The JSON readers of issue 12, classes 10 and 11: document order kept for
// files llm2hef rewrites (the HN), members dropped for readers that need
// only part of a file, and the per-kind size limits.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace {

using llm2hef::BadInput;
using llm2hef::sdk::JsonLimits;
using llm2hef::sdk::parse_json_without;
using llm2hef::sdk::parse_ordered_json;

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(OrderedJson, KeepsDocumentOrderAtEveryLevel) {
  const auto doc =
      parse_ordered_json(R"({"z": 1, "a": {"conv2": [1, {"y": 0, "b": 1}], "conv10": null}, "m": "x"})", "f.hn");
  std::vector<std::string> top, inner, deep;
  for (const auto& [k, v] : doc.items()) top.push_back(k);
  for (const auto& [k, v] : doc["a"].items()) inner.push_back(k);
  for (const auto& [k, v] : doc["a"]["conv2"][1].items()) deep.push_back(k);
  EXPECT_EQ(top, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(inner, (std::vector<std::string>{"conv2", "conv10"}));
  EXPECT_EQ(deep, (std::vector<std::string>{"y", "b"}));
  EXPECT_EQ(doc.dump(), R"({"z":1,"a":{"conv2":[1,{"y":0,"b":1}],"conv10":null},"m":"x"})");
}

TEST(OrderedJson, RefusesDuplicateKeysNamingWhere) {
  const std::string m = message_of([] { parse_ordered_json(R"({"layers": {"a": 1, "b": 2, "a": 3}})", "f.hn"); });
  EXPECT_NE(m.find("f.hn"), std::string::npos) << m;
  EXPECT_NE(m.find("in 'layers': key 'a' appears more than once"), std::string::npos) << m;
}

TEST(OrderedJson, BuildsLargeObjectsInLinearTime) {
  // 200,000 members: nlohmann's own builder searches the ordered object for
  // each key (2 * 10^10 comparisons); this must take well under a second.
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  const auto doc = parse_ordered_json(text, "big.json");
  ASSERT_EQ(doc.size(), 200000u);
  EXPECT_EQ(doc.begin().key(), "k0");
  EXPECT_EQ(doc.back(), 199999);
}

TEST(JsonWithout, DropsOnlyTheNamedMembersAndKeepsThemAsNull) {
  const auto doc = parse_json_without(
      R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b", ["c", "d"], {"x": [1]}]}, "merges": 7})",
      "tokenizer.json", {{"model", "merges"}});
  EXPECT_TRUE(doc["model"]["merges"].is_null());
  EXPECT_EQ(doc["model"]["vocab"]["a"], 0);
  EXPECT_EQ(doc["model"]["type"], "BPE");
  EXPECT_EQ(doc["merges"], 7);  // same key at another depth: kept
}

TEST(JsonWithout, WildcardDropsEveryTopLevelValue) {
  const auto doc = parse_json_without(R"({"model": {"vocab": {}}, "added_tokens": [1, 2], "version": "1.0"})",
                                      "tokenizer.json", {{"*"}});
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc.size(), 3u);
  EXPECT_TRUE(doc.contains("model") && doc["model"].is_null());
  EXPECT_TRUE(doc["version"].is_null());
}

TEST(JsonWithout, StillChecksWhatItDrops) {
  // Dropped is not unread: syntax, depth and duplicate keys inside are still checked.
  EXPECT_NE(message_of([] { parse_json_without(R"({"m": [1, 2,]})", "t.json", {{"m"}}); }).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              JsonLimits l;
              l.max_depth = 3;
              parse_json_without(R"({"m": [[[1]]]})", "t.json", {{"m"}}, l);
            }).find("nested too deeply"),
            std::string::npos);
  JsonLimits strict;
  strict.refuse_duplicate_keys = true;
  EXPECT_NE(message_of([&] {
              parse_json_without(R"({"m": {"a": 1, "a": 2}})", "t.json", {{"m"}}, strict);
            }).find("appears more than once"),
            std::string::npos);
}

TEST(JsonLimits, EachKindNamesItsLimit) {
  EXPECT_EQ(JsonLimits::tokenizer().max_bytes, 128u << 20);
  EXPECT_EQ(JsonLimits::hn().max_bytes, 128u << 20);
  EXPECT_EQ(JsonLimits::small_file().max_bytes, 16u << 20);
  EXPECT_EQ(JsonLimits::weight_index().max_bytes, 64u << 20);
  JsonLimits tiny = JsonLimits::tokenizer();
  tiny.max_bytes = 8;
  const std::string m = message_of([&] { parse_ordered_json(R"({"model": {}})", "x/tokenizer.json", tiny); });
  EXPECT_NE(m.find("x/tokenizer.json: 13 bytes of JSON exceed the limit of 8 bytes (0 MiB) for a tokenizer.json"),
            std::string::npos)
      << m;
}

}  // namespace
