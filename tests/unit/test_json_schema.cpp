// The JSON Schema subset validator, and the shipped manifest schema through it.
#include <string>

#include <gtest/gtest.h>

#include "llm2hef/registry/json_schema.hpp"
#include "llm2hef/registry/manifest.hpp"

using llm2hef::registry::describe;
using llm2hef::registry::JsonSchema;
using llm2hef::registry::manifest_schema;
using nlohmann::json;

namespace {

json good_manifest() {
  return json::parse(R"({
    "manifest_version": 1, "name": "acme_llama", "version": "1.2.3",
    "architectures": ["AcmeForCausalLM"], "model_types": ["acme"], "sdk_abi": 1,
    "library": {"file": "acme.so", "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
    "license": "Apache-2.0", "maintainer": "Acme <llm@acme.example>", "homepage": "https://acme.example/llm"})");
}

std::string problems(json m) { return describe(manifest_schema().validate(m)); }

}  // namespace

TEST(ManifestSchema, AcceptsAGoodManifest) { EXPECT_EQ(problems(good_manifest()), ""); }

TEST(ManifestSchema, NamesEveryFieldAtFault) {
  json m = good_manifest();
  m.erase("license");
  m["library"]["sha256"] = "ABC";
  m["architectures"] = json::array({"AcmeForCausalLM", "AcmeForCausalLM", "not valid"});
  m["sdk_abi"] = "1";
  m["extra"] = true;
  EXPECT_EQ(problems(m),
            "field 'license': is required; "
            "field 'architectures': item 1 repeats item 0 (\"AcmeForCausalLM\"); items must be unique; "
            "field 'architectures[2]': \"not valid\" does not match ^[A-Za-z_][A-Za-z0-9_]*$; "
            "field 'extra': is not a known field; "
            "field 'library.sha256': \"ABC\" does not match ^[0-9a-f]{64}$; "
            "field 'sdk_abi': expected an integer, got \"1\"");
}

TEST(ManifestSchema, ConstAndNesting) {
  json m = good_manifest();
  m["manifest_version"] = 2;
  m["library"].erase("file");
  m["library"]["size"] = -1;
  m["architectures"] = json::array();
  m["homepage"] = "ftp://nope";
  EXPECT_EQ(problems(m),
            "field 'architectures': needs at least 1 item(s); "
            "field 'homepage': \"ftp://nope\" does not match ^https?://[^ ]+$; "
            "field 'library.file': is required; field 'library.size': must be >= 0, got -1; "
            "field 'manifest_version': must be 1, got 2");
  EXPECT_EQ(problems(json::array()), "document: expected an object, got []");
}

TEST(JsonSchema, RefusesKeywordsItDoesNotImplement) {
  // A keyword silently ignored would make a document look checked when it is not.
  EXPECT_THROW(JsonSchema(json::parse(R"({"type": "object", "oneOf": []})")), std::invalid_argument);
  EXPECT_THROW(JsonSchema(json::parse(R"({"properties": {"a": {"format": "uri"}}})")), std::invalid_argument);
  EXPECT_THROW(JsonSchema(json::parse(R"({"additionalProperties": {"type": "string"}})")), std::invalid_argument);
  // Keyword values of the wrong type are refused when the schema is loaded,
  // not met as nlohmann errors during validation (found by fuzz_registry).
  for (const char* bad : {R"({"type": 5})", R"({"type": "text"})", R"({"required": "name"})", R"({"required": [1]})",
                          R"({"minLength": -1})", R"({"minItems": "2"})", R"({"uniqueItems": 1})", R"({"pattern": 3})",
                          R"({"pattern": "("})", R"({"enum": {}})", R"({"minimum": "0"})", R"({"properties": []})"})
    EXPECT_THROW(JsonSchema(json::parse(bad)), std::invalid_argument) << bad;
  EXPECT_NO_THROW(JsonSchema(json::parse(R"({"type": "string", "enum": ["a"], "maxLength": 3})")));
}

TEST(JsonSchema, LengthsCountCharactersNotBytes) {
  JsonSchema s(json::parse(R"({"type": "string", "maxLength": 3})"));
  EXPECT_TRUE(s.validate("héé").empty());
  EXPECT_FALSE(s.validate("abcd").empty());
  JsonSchema e(json::parse(R"({"enum": ["x", 2]})"));
  EXPECT_TRUE(e.validate(2).empty());
  EXPECT_EQ(describe(e.validate("y")), "document: must be one of [\"x\",2], got \"y\"");
}

// A 30,000-character field overflowed std::regex's recursion (issue 12,
// class 5): it is now refused by length before any pattern is tried.
TEST(ManifestSchema, HugePatternFieldIsRefusedNotACrash) {
  json m = good_manifest();
  m["architectures"] = json::array({std::string(30000, 'A')});
  const std::string p = problems(m);
  EXPECT_NE(p.find("field 'architectures[0]': longer than 4096 bytes"), std::string::npos) << p;
}
