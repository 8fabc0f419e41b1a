// registry::resolve(), architecture_conflicts() and the adapters report.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "llm2hef/registry/registry.hpp"
#include "llm2hef/registry/report.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "test_support.hpp"

namespace {

using namespace llm2hef::plugins;
using namespace llm2hef::registry;
using llm2hef::sdk::JsonFile;
using namespace llm2hef_test;

// One host for the whole suite: the test folder (three good adapters among
// broken files), loaded once.
class Registry : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    SearchOptions o;
    o.explicit_paths = {adapter_dir.string()};
    o.environment.reset();
    host_ = new AdapterHost(std::move(o));
    host_->discover();
  }
  static void TearDownTestSuite() {
    delete host_;
    host_ = nullptr;
  }
  static JsonFile config(nlohmann::json doc) { return JsonFile("/models/x/config.json", std::move(doc)); }

  // The message of the exception `resolve` throws, checking its type.
  template <typename E>
  static std::string error_of(const JsonFile& cfg, std::optional<std::string> override_name = std::nullopt) {
    try {
      resolve(cfg, *host_, override_name);
    } catch (const E& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong exception type: " << e.what();
      return {};
    }
    ADD_FAILURE() << "resolve() did not throw";
    return {};
  }

  static AdapterHost* host_;
};
AdapterHost* Registry::host_ = nullptr;

const std::string claim_a_file = (adapter_dir / "claim_a.so").string();
const std::string claim_b_file = (adapter_dir / "claim_b.so").string();

TEST_F(Registry, ByArchitecture) {
  auto r = resolve(config({{"architectures", {"FakeForCausalLM"}}, {"model_type", "whatever"}}), *host_, {});
  ASSERT_NE(r.adapter, nullptr);
  EXPECT_EQ(r.adapter->name(), "fake_good");
  EXPECT_EQ(r.how, MatchKind::architecture);
  EXPECT_EQ(r.matched, "FakeForCausalLM");
}

TEST_F(Registry, AnyListedArchitectureMatches) {
  auto r = resolve(config({{"architectures", {"UnknownModel", "OnlyAForCausalLM"}}}), *host_, {});
  EXPECT_EQ(r.adapter->name(), "claim_a");
  EXPECT_EQ(r.matched, "OnlyAForCausalLM");
}

TEST_F(Registry, ArchitectureBeatsModelType) {
  // model_type "clash" would be ambiguous, but the architecture settles it first.
  auto r = resolve(config({{"architectures", {"FakeForCausalLM"}}, {"model_type", "clash"}}), *host_, {});
  EXPECT_EQ(r.adapter->name(), "fake_good");
}

TEST_F(Registry, FallsBackToModelType) {
  auto r = resolve(config({{"architectures", {"SomethingElse"}}, {"model_type", "fake"}}), *host_, {});
  EXPECT_EQ(r.adapter->name(), "fake_good");
  EXPECT_EQ(r.how, MatchKind::model_type);
  EXPECT_EQ(r.matched, "fake");

  auto no_arch = resolve(config({{"model_type", "fake"}}), *host_, {});
  EXPECT_EQ(no_arch.adapter->name(), "fake_good");
}

TEST_F(Registry, OverrideByName) {
  // Even for a checkpoint another adapter would match, or none would.
  auto r = resolve(config({{"architectures", {"ClashForCausalLM"}}}), *host_, "claim_b");
  EXPECT_EQ(r.adapter->name(), "claim_b");
  EXPECT_EQ(r.how, MatchKind::override_name);
  EXPECT_EQ(r.matched, "claim_b");
  EXPECT_EQ(resolve(config({{"architectures", {"Nothing"}}}), *host_, "fake_good").adapter->name(), "fake_good");
}

TEST_F(Registry, UnknownOverride) {
  EXPECT_EQ(error_of<llm2hef::UsageError>(config({{"architectures", {"FakeForCausalLM"}}}), "nope"),
            "unknown adapter 'nope' (--adapter); available adapters: claim_a, claim_b, fake_good");
}

TEST_F(Registry, NoMatch) {
  EXPECT_EQ(error_of<llm2hef::Unsupported>(
                config({{"architectures", {"MysteryForCausalLM"}}, {"model_type", "mystery"}})),
            "/models/x/config.json: no adapter supports this model (architectures ['MysteryForCausalLM'], "
            "model_type 'mystery'); supported architectures: ClashForCausalLM (claim_a), OnlyAForCausalLM (claim_a), "
            "ClashForCausalLM (claim_b), FakeForCausalLM (fake_good); pass --adapter NAME to force one");
  EXPECT_EQ(error_of<llm2hef::Unsupported>(config(nlohmann::json::object())),
            "/models/x/config.json: no adapter supports this model (architectures [], model_type (none)); "
            "supported architectures: ClashForCausalLM (claim_a), OnlyAForCausalLM (claim_a), "
            "ClashForCausalLM (claim_b), FakeForCausalLM (fake_good); pass --adapter NAME to force one");
}

TEST_F(Registry, ConflictGoesToTheAdapterFoundFirstWithAWarning) {
  auto r = resolve(config({{"architectures", {"ClashForCausalLM"}}}), *host_, {});
  EXPECT_EQ(r.adapter->name(), "claim_a");  // claim_a.so sorts before claim_b.so in the folder
  EXPECT_EQ(r.how, MatchKind::architecture);
  ASSERT_EQ(r.passed_over.size(), 1u);
  EXPECT_EQ(r.passed_over[0]->name(), "claim_b");
  EXPECT_EQ(r.warning,
            "/models/x/config.json: architecture 'ClashForCausalLM' is claimed by more than one adapter; "
            "using claim_a (" +
                claim_a_file + "), found first in the search order, over claim_b (" + claim_b_file +
                ", claims 'ClashForCausalLM'); pass --adapter NAME to choose another");
  nlohmann::json recorded = resolution_json(r);
  EXPECT_EQ(recorded["name"], "claim_a");
  EXPECT_EQ(recorded["passed_over"], nlohmann::json::parse(R"([{"name":"claim_b","file":")" + claim_b_file + R"("}])"));
  EXPECT_EQ(recorded["warning"], r.warning);
}

TEST_F(Registry, ConflictFollowsTheConfigsArchitectureOrder) {
  // Two architectures of one config claimed by different adapters: the one
  // config.json lists first decides, whatever the search order.
  auto a = resolve(config({{"architectures", {"OnlyAForCausalLM", "FakeForCausalLM"}}}), *host_, {});
  EXPECT_EQ(a.adapter->name(), "claim_a");
  ASSERT_EQ(a.passed_over.size(), 1u);
  EXPECT_EQ(a.passed_over[0]->name(), "fake_good");
  EXPECT_NE(a.warning.find("fake_good (" + (adapter_dir / "fake_good.so").string() + ", claims 'FakeForCausalLM')"),
            std::string::npos)
      << a.warning;
  auto f = resolve(config({{"architectures", {"FakeForCausalLM", "OnlyAForCausalLM"}}}), *host_, {});
  EXPECT_EQ(f.adapter->name(), "fake_good");
  EXPECT_EQ(f.passed_over[0]->name(), "claim_a");
}

TEST_F(Registry, AnEarlierSearchRootWinsAConflict) {
  // claim_b given on its own before the folder: it is found first, so it wins,
  // which is how a user prefers a development build without --adapter.
  SearchOptions o;
  o.explicit_paths = {claim_b_file, adapter_dir.string()};
  o.environment.reset();
  AdapterHost host(std::move(o));
  host.discover();
  auto r = resolve(config({{"architectures", {"ClashForCausalLM"}}}), host, {});
  EXPECT_EQ(r.adapter->name(), "claim_b");
  ASSERT_EQ(r.passed_over.size(), 1u);
  EXPECT_EQ(r.passed_over[0]->name(), "claim_a");
}

TEST_F(Registry, UniqueAndOverriddenMatchesCarryNoWarning) {
  auto unique = resolve(config({{"architectures", {"FakeForCausalLM"}}}), *host_, {});
  EXPECT_TRUE(unique.passed_over.empty());
  EXPECT_TRUE(unique.warning.empty());
  EXPECT_FALSE(resolution_json(unique).contains("warning"));
  auto chosen = resolve(config({{"architectures", {"ClashForCausalLM"}}}), *host_, "claim_b");
  EXPECT_EQ(chosen.adapter->name(), "claim_b");
  EXPECT_TRUE(chosen.passed_over.empty());
  EXPECT_TRUE(chosen.warning.empty());
}

TEST_F(Registry, ModelTypeConflict) {
  auto r = resolve(config({{"model_type", "clash"}}), *host_, {});
  EXPECT_EQ(r.adapter->name(), "claim_a");
  EXPECT_EQ(r.how, MatchKind::model_type);
  EXPECT_EQ(r.warning,
            "/models/x/config.json: model_type 'clash' is claimed by more than one adapter; using claim_a (" +
                claim_a_file + "), found first in the search order, over claim_b (" + claim_b_file +
                ", claims 'clash'); pass --adapter NAME to choose another");
}

TEST_F(Registry, MistypedFieldsAreBadInput) {
  EXPECT_EQ(error_of<llm2hef::BadInput>(config({{"architectures", "FakeForCausalLM"}})),
            "/models/x/config.json: field 'architectures': expected a list of strings, got \"FakeForCausalLM\"");
  EXPECT_EQ(error_of<llm2hef::BadInput>(config({{"architectures", {"X"}}, {"model_type", 3}})),
            "/models/x/config.json: field 'model_type': expected a string, got 3");
}

TEST_F(Registry, NoAdaptersAtAll) {
  AdapterHost empty;
  empty.discover();
  try {
    resolve(config({{"architectures", {"FakeForCausalLM"}}}), empty, {});
    FAIL() << "resolved with no adapters";
  } catch (const llm2hef::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("no adapters were found"), std::string::npos) << e.what();
  }
  EXPECT_THROW(resolve(config({}), empty, "fake_good"), llm2hef::UsageError);
}

TEST_F(Registry, ArchitectureConflicts) {
  auto conflicts = architecture_conflicts(*host_);
  ASSERT_EQ(conflicts.size(), 1u);
  EXPECT_EQ(conflicts[0].architecture, "ClashForCausalLM");
  ASSERT_EQ(conflicts[0].adapters.size(), 2u);
  EXPECT_EQ(conflicts[0].adapters[0]->name(), "claim_a");
  EXPECT_EQ(conflicts[0].adapters[1]->name(), "claim_b");
}

TEST_F(Registry, ReportJson) {
  nlohmann::json r = adapters_report(*host_, false);
  EXPECT_FALSE(r.contains("considered"));
  ASSERT_EQ(r["adapters"].size(), 3u);
  const auto& good = r["adapters"][2];
  EXPECT_EQ(good["name"], "fake_good");
  EXPECT_EQ(good["version"], "1.0.0");
  EXPECT_EQ(good["description"], "a well-formed test adapter");
  EXPECT_EQ(good["architectures"], nlohmann::json({"FakeForCausalLM"}));
  EXPECT_EQ(good["model_types"], nlohmann::json({"fake"}));
  EXPECT_EQ(good["file"], (adapter_dir / "fake_good.so").string());
  EXPECT_EQ(good["options"], nlohmann::json::parse(R"([{"name":"flavor","choices":["plain","spicy"],
                                                        "default":"plain","help":"which flavor to fake"}])"));
  EXPECT_EQ(r["conflicts"], nlohmann::json::parse(R"([{"architecture":"ClashForCausalLM",
                                                       "adapters":["claim_a","claim_b"], "chosen":"claim_a"}])"));

  nlohmann::json v = adapters_report(*host_, true);
  ASSERT_EQ(v["considered"].size(), 13u);
  EXPECT_EQ(v["roots"].size(), 1u);
  for (const auto& c : v["considered"]) {
    EXPECT_TRUE(c["status"] == "loaded" || c["status"] == "skipped");
    EXPECT_EQ(c["root"], adapter_dir.string());
  }
  const auto& first = v["considered"][0];
  EXPECT_EQ(first["file"], (adapter_dir / "bad_fingerprint.so").string());
  EXPECT_EQ(first["status"], "skipped");
  EXPECT_EQ(first["error"], "fingerprint_mismatch");
  EXPECT_EQ(first["root_kind"], "--adapter-path");
  EXPECT_EQ(v["considered"][1]["status"], "loaded");
  EXPECT_TRUE(v["considered"][1]["error"].is_null());
}

TEST_F(Registry, ReportText) {
  std::string text = adapters_text(adapters_report(*host_, false));
  EXPECT_NE(text.find("NAME"), std::string::npos) << text;
  EXPECT_NE(text.find("fake_good  1.0.0    FakeForCausalLM"), std::string::npos) << text;
  EXPECT_NE(text.find("--flavor plain|spicy (default: plain)  which flavor to fake"), std::string::npos) << text;
  EXPECT_NE(text.find("ClashForCausalLM: claim_a, claim_b"), std::string::npos) << text;
  EXPECT_EQ(text.find("Files considered"), std::string::npos) << text;

  std::string verbose = adapters_text(adapters_report(*host_, true));
  EXPECT_NE(verbose.find("Files considered"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("factory threw: boom"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("skipped"), std::string::npos) << verbose;

  AdapterHost empty;
  EXPECT_EQ(adapters_text(adapters_report(empty, false)),
            "No adapters found. Run with --verbose to see where llm2hef looked.\n");
}

}  // namespace
