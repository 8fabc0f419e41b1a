// registry::search_index (what `llm2hef registry search` lists),
// registry::installed_state (what `registry list` says of a library) and the
// typed adapter manifest (read and written back), on values built here: no
// index is fetched, nothing is signed.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llm2hef/registry/installer.hpp"
#include "llm2hef/registry/manifest.hpp"
#include "llm2hef/registry/search.hpp"
#include "llm2hef/registry/sha256.hpp"
#include "llm2hef/sdk/abi.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "temp_dir.hpp"

namespace {

using llm2hef::registry::IndexEntry;
using nlohmann::json;

IndexEntry entry(const std::string& name, const std::string& version, json extra = json::object()) {
  json m = {{"manifest_version", 1},
            {"name", name},
            {"version", version},
            {"description", "adapter " + name},
            {"architectures", {name + "ForCausalLM"}},
            {"sdk_abi", LLM2HEF_ADAPTER_ABI_VERSION},
            {"sdk_fingerprint", llm2hef::registry::host_fingerprint()},
            {"library", {{"file", "lib" + name + ".so"}, {"sha256", std::string(64, 'a')}, {"size", 10}}},
            {"license", "MIT"},
            {"maintainer", "Test <t@example.org>"}};
  m.update(extra);
  return {llm2hef::registry::parse_adapter_manifest(m, "test#" + name),
          "https://example.org/" + name + "-" + version + ".so", "test#" + name};
}

llm2hef::registry::SignedIndex index_of(std::vector<IndexEntry> entries) {
  llm2hef::registry::SignedIndex index;
  index.entries = std::move(entries);
  return index;
}

TEST(RegistrySearch, MatchesNameDescriptionArchitecturesAndModelTypesWithoutCase) {
  llm2hef::registry::AdapterManifest m;
  m.name = "falcon";
  m.description = "Falcon decoder";
  m.architectures = {"FalconForCausalLM"};
  m.model_types = std::vector<std::string>{"falcon_h1"};
  EXPECT_TRUE(llm2hef::registry::manifest_matches(m, ""));
  EXPECT_TRUE(llm2hef::registry::manifest_matches(m, "FALC"));
  EXPECT_TRUE(llm2hef::registry::manifest_matches(m, "decoder"));
  EXPECT_TRUE(llm2hef::registry::manifest_matches(m, "forcausallm"));
  EXPECT_TRUE(llm2hef::registry::manifest_matches(m, "_h1"));
  EXPECT_FALSE(llm2hef::registry::manifest_matches(m, "llama"));
}

TEST(RegistrySearch, OneRowPerNameVersionsNewestFirstInstalledNamed) {
  const auto index = index_of({entry("zeta", "0.9.0"), entry("alpha", "1.2.0"), entry("alpha", "1.10.0"),
                               entry("alpha", "0.3.1"), entry("beta", "2.0.0")});
  const auto found = llm2hef::registry::search_index(index, "", {{"alpha", "1.2.0"}});
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].name, "alpha");
  EXPECT_EQ(found[1].name, "beta");
  EXPECT_EQ(found[2].name, "zeta");
  std::vector<std::string> versions;
  for (const auto& v : found[0].versions) versions.push_back(v.entry->version());
  EXPECT_EQ(versions, (std::vector<std::string>{"1.10.0", "1.2.0", "0.3.1"}));  // by number, not by text
  EXPECT_EQ(found[0].newest().version, "1.10.0");
  EXPECT_EQ(found[0].installed, "1.2.0");
  EXPECT_FALSE(found[1].installed.has_value());
}

TEST(RegistrySearch, EachVersionSaysWhyItsBuildDoesNotFit) {
  const auto index = index_of({entry("alpha", "1.0.0"), entry("alpha", "0.9.0", {{"sdk_abi", 1}}),
                               entry("alpha", "0.8.0", {{"sdk_fingerprint", "another-compiler"}})});
  const auto found = llm2hef::registry::search_index(index, "alpha", {});
  ASSERT_EQ(found.size(), 1u);
  ASSERT_EQ(found[0].versions.size(), 3u);
  EXPECT_EQ(found[0].versions[0].incompatibility, "");
  EXPECT_NE(found[0].versions[1].incompatibility.find("built for SDK ABI 1"), std::string::npos);
  EXPECT_NE(found[0].versions[2].incompatibility.find("another-compiler"), std::string::npos);
}

TEST(RegistrySearch, NoMatchIsAnEmptyList) {
  const auto index = index_of({entry("alpha", "1.0.0")});
  EXPECT_TRUE(llm2hef::registry::search_index(index, "mamba", {}).empty());
}

TEST(RegistryInstalledState, OkMissingOrModifiedAgainstTheRecordedSha256) {
  llm2hef::testing::TempDir dir;
  llm2hef::registry::InstalledAdapter a;
  a.library = dir / "libalpha.so";
  std::ofstream(a.library) << "library bytes";
  a.manifest.name = "alpha";
  a.manifest.version = "1.0.0";
  a.manifest.library.sha256 = llm2hef::registry::sha256_hex("library bytes");
  EXPECT_EQ(llm2hef::registry::installed_state(a), llm2hef::registry::InstalledState::ok);
  std::ofstream(a.library) << "changed bytes";
  EXPECT_EQ(llm2hef::registry::installed_state(a), llm2hef::registry::InstalledState::modified);
  std::filesystem::remove(a.library);
  EXPECT_EQ(llm2hef::registry::installed_state(a), llm2hef::registry::InstalledState::missing);
  EXPECT_STREQ(llm2hef::registry::to_string(llm2hef::registry::InstalledState::modified), "modified");
}

// A manifest is written again as it was read (an installed one, an entry of a
// collected index whose bytes are signed): every field, optional ones absent
// or present, and model_types absent kept apart from model_types empty.
TEST(AdapterManifest, ReadsBackAsWritten) {
  const json full = {{"manifest_version", 1},
                     {"name", "alpha"},
                     {"version", "1.0.0"},
                     {"description", "an adapter"},
                     {"architectures", {"AlphaForCausalLM", "AlphaModel"}},
                     {"model_types", json::array()},
                     {"sdk_abi", 4},
                     {"sdk_fingerprint", "gcc-12"},
                     {"library",
                      {{"file", "libalpha.so"},
                       {"sha256", std::string(64, 'b')},
                       {"size", 123456789012ull},
                       {"url", "https://example.org/libalpha.so"}}},
                     {"license", "Apache-2.0"},
                     {"maintainer", "A <a@example.org>"},
                     {"homepage", "https://example.org"}};
  const auto typed = llm2hef::registry::parse_adapter_manifest(full, "full.json");
  EXPECT_EQ(typed.library.size, 123456789012ull);
  ASSERT_TRUE(typed.model_types.has_value());
  EXPECT_TRUE(typed.model_types->empty());
  EXPECT_EQ(llm2hef::registry::adapter_manifest_json(typed).dump(), full.dump());

  json minimal = full;
  for (const char* key : {"description", "model_types", "sdk_fingerprint", "homepage"}) minimal.erase(key);
  minimal["library"].erase("size");
  minimal["library"].erase("url");
  const auto bare = llm2hef::registry::parse_adapter_manifest(minimal, "minimal.json");
  EXPECT_FALSE(bare.model_types.has_value());
  EXPECT_TRUE(bare.listed_model_types().empty());
  EXPECT_EQ(llm2hef::registry::adapter_manifest_json(bare).dump(), minimal.dump());
}

TEST(AdapterManifest, RefusesWhatTheSchemaRefusesNamingTheFileAndField) {
  json doc = {{"manifest_version", 1}, {"name", "alpha"}, {"version", "1.0.0"}};
  try {
    (void)llm2hef::registry::parse_adapter_manifest(doc, "alpha/1.0.0.json");
    FAIL() << "accepted a manifest without architectures, sdk_abi, library, license, maintainer";
  } catch (const llm2hef::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("alpha/1.0.0.json: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("architectures"), std::string::npos) << e.what();
  }
}

}  // namespace
