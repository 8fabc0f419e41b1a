// The typed export manifest (reader, writer, schema), the runtime contract
// table it is built from, and the planning step's hold on --cache/--prefill.
#include <gtest/gtest.h>

#include <set>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/core/export/model_plan.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace {

using llm2hef::BadInput;
using llm2hef::InternalError;
using nlohmann::json;
namespace core = llm2hef::core;
namespace sdk = llm2hef::sdk;

// A plan as an adapter would make it: 2 heads of 4, GQA 2/1, vocab 10 in two shards.
sdk::Plan small_plan() {
  sdk::Plan p;
  p.dims = {8, 2, 10, 2, 1, 4, 32};
  p.cache_size = 16;
  p.prefill = 4;
  p.theta = {1.0f, 0.5f, 1.0f, 0.5f};
  p.pe_q_tiles = 2;
  p.pe_k_tiles = 1;
  p.lm_head_shards = {6, 4};
  p.lm_head_shard_reason = "test";
  p.options = {{"gelu", "tanh"}};
  return p;
}

core::ExportManifest small_manifest() {
  core::ExportManifest m = core::manifest_for_plan(small_plan());
  m.llm2hef_version = "0.1.0";
  m.adapter = {{"name", "fake"},
               {"version", "1.0.0"},
               {"file", "/x/fake.so"},
               {"matched_by", "architecture"},
               {"matched", "FakeForCausalLM"},
               {"passed_over", json::array()}};
  m.model = {"tiny", "/models/tiny", json::array({"FakeForCausalLM"}), "fake", 1000};
  m.dfc = {"tiny", 8, {"tiny__prefill", "tiny__tbt"}};
  m.files = {{"model.onnx", "the graph"}};
  m.graph_annotations = {{"note", "x"}};
  m.resource_changes = {"none"};
  return m;
}

std::string error_of(const json& doc) {
  try {
    core::parse_manifest(doc, "/exp/manifest.json");
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

// hailort v5.2.0 LLMServer::parse_config_json reads exactly these suffix keys,
// and its defaults are input_layer1..6 in this order (hailo-contract.md section 9).
TEST(RuntimeContract, RolesAndDefaultSuffixesAreTheRuntimes) {
  const std::vector<std::pair<std::string, std::string>> runtime = {{"embeddings", "input_layer1"},
                                                                    {"attention_mask", "input_layer2"},
                                                                    {"pe_q_cos", "input_layer3"},
                                                                    {"pe_q_sin", "input_layer4"},
                                                                    {"pe_k_cos", "input_layer5"},
                                                                    {"pe_k_sin", "input_layer6"}};
  ASSERT_EQ(sdk::kRuntimeInputs.size(), runtime.size());
  for (size_t i = 0; i < runtime.size(); ++i) {
    EXPECT_EQ(sdk::kRuntimeInputs[i].role, runtime[i].first);
    EXPECT_EQ(sdk::kRuntimeInputs[i].dfc_layer, runtime[i].second);
    EXPECT_EQ(static_cast<size_t>(sdk::kRuntimeInputs[i].id), i);  // runtime_input(id) indexes the table
    EXPECT_EQ(sdk::find_runtime_input(runtime[i].first), &sdk::kRuntimeInputs[i]);
  }
  EXPECT_EQ(sdk::find_runtime_input("pe_cos"), nullptr);
  std::set<std::string_view> names;
  for (const auto& in : sdk::kRuntimeInputs) names.insert(in.name);
  EXPECT_EQ(names.size(), sdk::kRuntimeInputs.size()) << "ONNX input names must be distinct";
}

TEST(RuntimeContract, ShapesInTheGraphAndOnTheDevice) {
  const sdk::RuntimeSizes s{16, 8, 3, 4, 3, 1};
  using R = sdk::InputRole;
  EXPECT_EQ(sdk::graph_shape(sdk::runtime_input(R::embeddings), s), (std::vector<int64_t>{1, 16, 8}));
  EXPECT_EQ(sdk::graph_shape(sdk::runtime_input(R::attention_mask), s), (std::vector<int64_t>{1, 1, 16, 48}));
  EXPECT_EQ(sdk::graph_shape(sdk::runtime_input(R::pe_q_sin), s), (std::vector<int64_t>{1, 16, 4}));
  // The runtime writes q tables num_attention_heads times and k tables num_key_value_heads times.
  EXPECT_EQ(sdk::device_shape(sdk::runtime_input(R::pe_q_cos), s), (std::vector<int64_t>{1, 16, 12}));
  EXPECT_EQ(sdk::device_shape(sdk::runtime_input(R::pe_k_cos), s), (std::vector<int64_t>{1, 16, 4}));
  EXPECT_EQ(sdk::device_shape(sdk::runtime_input(R::attention_mask), s), (std::vector<int64_t>{1, 1, 16, 48}));
}

TEST(ExportManifest, WrittenDocumentPassesTheSchemaAndReadsBack) {
  const core::ExportManifest m = small_manifest();
  const json doc = core::manifest_json(m);
  EXPECT_TRUE(core::export_manifest_schema().validate(doc).empty())
      << llm2hef::registry::describe(core::export_manifest_schema().validate(doc));
  const core::ExportManifest back = core::parse_manifest(doc, "m.json");
  EXPECT_EQ(core::manifest_json(back), doc);
  EXPECT_EQ(back.adapter_name(), "fake");
  ASSERT_NE(back.input("attention_mask"), nullptr);
  EXPECT_EQ(back.input("attention_mask")->shape, (std::vector<int64_t>{1, 1, 16, 32}));
  EXPECT_FALSE(doc.contains("cache_cost")) << "written only when the adapter states one";
}

TEST(ExportManifest, CacheCostIsItsOwnField) {
  sdk::Plan p = small_plan();
  p.cache_cost.values_per_position = 96;
  p.cache_cost.layout = "K, V and B*x";
  p.cache_cost.figures = {{"conv_layers", 1}};
  core::ExportManifest m = small_manifest();
  m.cache_cost = core::manifest_for_plan(p).cache_cost;
  const json doc = core::manifest_json(m);
  EXPECT_EQ(doc["cache_cost"]["values_per_position"], 96);
  EXPECT_EQ(doc["options"], (json{{"gelu", "tanh"}})) << "options hold only the adapter's options";
  EXPECT_EQ(core::parse_manifest(doc, "m.json").cache_cost.figures, p.cache_cost.figures);
}

TEST(ExportManifest, ErrorsNameTheFileAndTheField) {
  json doc = core::manifest_json(small_manifest());
  doc["dims"].erase("heads");
  std::string e = error_of(doc);
  EXPECT_NE(e.find("/exp/manifest.json"), std::string::npos) << e;
  EXPECT_NE(e.find("dims"), std::string::npos) << e;
  EXPECT_NE(e.find("heads"), std::string::npos) << e;

  doc = core::manifest_json(small_manifest());
  doc["pe_tiles"]["k"] = "two";
  e = error_of(doc);
  EXPECT_NE(e.find("field 'pe_tiles.k'"), std::string::npos) << e;

  doc = core::manifest_json(small_manifest());
  doc["lm_head_shards"] = json::array({6, 0});
  e = error_of(doc);
  EXPECT_NE(e.find("lm_head_shards[1]"), std::string::npos) << e;

  doc = core::manifest_json(small_manifest());
  doc["unknown_key"] = 1;
  e = error_of(doc);
  EXPECT_NE(e.find("unknown_key"), std::string::npos) << e;

  doc = core::manifest_json(small_manifest());
  doc["manifest_version"] = core::kManifestVersion + 1;
  e = error_of(doc);
  EXPECT_NE(e.find("field 'manifest_version'"), std::string::npos) << e;
  EXPECT_NE(error_of(json::array()), "");
}

TEST(ExportManifest, VersionOneIsRead) {
  json doc = core::manifest_json(small_manifest());
  doc.erase("manifest_version");
  doc["format_version"] = 1;
  const core::ExportManifest m = core::parse_manifest(doc, "old.json");
  EXPECT_EQ(m.manifest_version, core::kManifestVersion);
  EXPECT_EQ(m.dims.vocab, 10);
  doc["format_version"] = 7;
  EXPECT_NE(error_of(doc), "");
}

// The core owns --cache and --prefill: filled when the adapter leaves them
// out, refused (exit 5, naming the adapter) when it sets others.
TEST(PlanStep, CoreFillsOrRefusesTheUsersNumbers) {
  const auto ckpt = core::open_checkpoint(std::string(LLM2HEF_SOURCE_DIR) + "/tests/fixtures/gpt2-tiny");
  sdk::ExportOptions opt;
  opt.cache_size = 32;
  opt.prefill = 8;
  auto plan_for_checkpoint = [&] {
    sdk::Plan p;
    const auto& shape = ckpt->info("transformer.wte.weight").shape;
    p.dims = {shape[1], 1, shape[0], 2, 2, shape[1] / 2, 4 * shape[1]};
    p.theta = {1.0f, 1.0f};
    p.pe_q_tiles = p.pe_k_tiles = 2;
    p.embedding_tensor = "transformer.wte.weight";
    p.lm_head_shards = {shape[0]};
    return p;
  };
  sdk::Plan left_out = plan_for_checkpoint();
  core::settle_plan(left_out, opt, *ckpt, "fake");
  EXPECT_EQ(left_out.cache_size, 32);
  EXPECT_EQ(left_out.prefill, 8);

  sdk::Plan copied = plan_for_checkpoint();
  copied.cache_size = 32;
  copied.prefill = 8;
  EXPECT_NO_THROW(core::settle_plan(copied, opt, *ckpt, "fake"));

  sdk::Plan wrong = plan_for_checkpoint();
  wrong.cache_size = 64;
  try {
    core::settle_plan(wrong, opt, *ckpt, "fake");
    FAIL() << "a plan with another cache was accepted";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("adapter 'fake'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--cache 32"), std::string::npos) << e.what();
  }
  sdk::Plan wrong_prefill = plan_for_checkpoint();
  wrong_prefill.prefill = 9;
  EXPECT_THROW(core::settle_plan(wrong_prefill, opt, *ckpt, "fake"), InternalError);

  // No --cache: the adapter's choice, else the runtime's default; no
  // --prefill: 96, or the cache when smaller.
  sdk::ExportOptions unset;
  sdk::Plan runtime_default = plan_for_checkpoint();
  core::settle_plan(runtime_default, unset, *ckpt, "fake");
  EXPECT_EQ(runtime_default.cache_size, core::kDefaultCacheCap);
  EXPECT_EQ(runtime_default.prefill, core::kDefaultPrefill);
  sdk::Plan adapter_default = plan_for_checkpoint();
  adapter_default.cache_size = 40;
  core::settle_plan(adapter_default, unset, *ckpt, "fake");
  EXPECT_EQ(adapter_default.cache_size, 40);
  EXPECT_EQ(adapter_default.prefill, 40);
  sdk::Plan too_small = plan_for_checkpoint();
  too_small.cache_size = 1;
  EXPECT_THROW(core::settle_plan(too_small, unset, *ckpt, "fake"), llm2hef::UsageError);
}

}  // namespace
