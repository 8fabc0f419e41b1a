// The decoder description (sdk/decoder_model.hpp): the tensor table derived
// from the specs a member edits, checked in one loop; forward keys refused
// before anything else is read; the description handed from plan() to
// build_graph() inside the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "llm2hef/families/llama_family.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/forward_keys.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"
#include "temp_dir.hpp"

namespace {

using namespace llm2hef::sdk;
using namespace llm2hef::families;
using nlohmann::json;

// Tensor shapes only: enough to describe and plan, nothing to build from.
class ShapesOnlyCheckpoint : public Checkpoint {
 public:
  ShapesOnlyCheckpoint(json config, std::map<std::string, std::vector<int64_t>> shapes)
      : config_("ckpt/config.json", std::move(config)) {
    for (auto& [name, shape] : shapes)
      tensors_[name] = TensorInfo{name, DType::f32, "F32", shape, "ckpt/model.safetensors"};
  }
  const std::filesystem::path& dir() const override { return dir_; }
  const JsonFile& config() const override { return config_; }
  const JsonFile& generation_config() const override { return empty_; }
  const JsonFile& tokenizer_config() const override { return empty_; }
  std::filesystem::path tokenizer_json() const override { return {}; }
  bool has(std::string_view t) const override { return tensors_.count(std::string(t)) > 0; }
  const TensorInfo& info(std::string_view t) const override {
    const auto it = tensors_.find(std::string(t));
    if (it == tensors_.end()) throw llm2hef::BadInput("ckpt: tensor '" + std::string(t) + "' not found");
    return it->second;
  }
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& [name, info] : tensors_) names.push_back(name);
    return names;
  }
  void read_rows(std::string_view, int64_t, int64_t, std::span<float>) const override {
    throw llm2hef::InternalError("ShapesOnlyCheckpoint holds no values");
  }

 private:
  std::filesystem::path dir_ = "ckpt";
  JsonFile config_;
  JsonFile empty_;
  std::map<std::string, TensorInfo> tensors_;
};

// A one-layer Llama: hidden 8, 2 heads of 4, 1 kv head, intermediate 16, vocab 10.
json llama_config() {
  return {{"hidden_size", 8},        {"num_hidden_layers", 1}, {"num_attention_heads", 2},   {"num_key_value_heads", 1},
          {"intermediate_size", 16}, {"vocab_size", 10},       {"tie_word_embeddings", true}};
}
std::map<std::string, std::vector<int64_t>> llama_shapes() {
  const std::string p = "model.layers.0.";
  return {{"model.embed_tokens.weight", {10, 8}},  {"model.norm.weight", {8}},
          {p + "input_layernorm.weight", {8}},     {p + "post_attention_layernorm.weight", {8}},
          {p + "self_attn.q_proj.weight", {8, 8}}, {p + "self_attn.k_proj.weight", {4, 8}},
          {p + "self_attn.v_proj.weight", {4, 8}}, {p + "self_attn.o_proj.weight", {8, 8}},
          {p + "mlp.gate_proj.weight", {16, 8}},   {p + "mlp.up_proj.weight", {16, 8}},
          {p + "mlp.down_proj.weight", {8, 16}}};
}

bool has_row(const TensorTable& t, const std::string& name) {
  return std::any_of(t.rows().begin(), t.rows().end(),
                     [&](const TensorRow& r) { return r.name == name && r.presence != TensorRow::Presence::refused; });
}

class Llama final : public DecoderAdapter {
 public:
  AdapterInfo info() const override { return {"test_llama", "0.0.0", "", {}, {}, {}}; }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions&) const override {
    return describe_llama_family(ckpt);
  }
};

ExportOptions cache(int64_t n) {
  ExportOptions o;
  o.cache_size = n;
  o.prefill = n / 2;
  return o;
}

TEST(DecoderModel, EveryTensorOfTheLlamaFamilyIsDerivedFromTheSpecsAndChecked) {
  const ShapesOnlyCheckpoint ckpt(llama_config(), llama_shapes());
  const DecoderModel m = describe_llama_family(ckpt);
  ASSERT_EQ(m.layers.size(), 1u);
  const TensorTable table = described_tensors(m);
  for (const auto& [name, shape] : llama_shapes()) EXPECT_TRUE(has_row(table, name)) << name;
  EXPECT_NO_THROW(table.check(ckpt));
}

TEST(DecoderModel, AMembersEditOfASpecEditsTheTable) {
  auto shapes = llama_shapes();
  const ShapesOnlyCheckpoint without_bias(llama_config(), shapes);
  DecoderModel m = describe_llama_family(without_bias);
  attention_spec(m.layers[0]).qkv_bias = true;  // what qwen2 does
  const TensorTable table = described_tensors(m);
  EXPECT_TRUE(has_row(table, "model.layers.0.self_attn.q_proj.bias"));
  EXPECT_TRUE(has_row(table, "model.layers.0.self_attn.k_proj.bias"));
  EXPECT_THROW(table.check(without_bias), llm2hef::BadInput);  // the biases it now reads are missing

  shapes["model.layers.0.self_attn.q_proj.bias"] = {8};
  shapes["model.layers.0.self_attn.k_proj.bias"] = {4};
  shapes["model.layers.0.self_attn.v_proj.bias"] = {4};
  EXPECT_NO_THROW(table.check(ShapesOnlyCheckpoint(llama_config(), shapes)));
}

TEST(DecoderModel, ATensorAnotherMemberReadsIsRefusedUnlessTheDescriptionReadsIt) {
  auto shapes = llama_shapes();
  shapes["model.layers.0.self_attn.q_proj.bias"] = {8};
  shapes["model.layers.0.self_attn.k_proj.bias"] = {4};
  shapes["model.layers.0.self_attn.v_proj.bias"] = {4};
  const ShapesOnlyCheckpoint qwen2_like(llama_config(), shapes);
  DecoderModel m = describe_llama_family(qwen2_like);
  try {
    described_tensors(m).check(qwen2_like);
    FAIL() << "a q_proj.bias nothing reads was accepted";
  } catch (const llm2hef::Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("'model.layers.0.self_attn.q_proj.bias' is not read by this adapter"),
              std::string::npos)
        << e.what();
  }
  attention_spec(m.layers[0]).qkv_bias = true;
  EXPECT_NO_THROW(described_tensors(m).check(qwen2_like));
}

TEST(DecoderModel, AShapeThatDisagreesWithTheConfigIsReportedByName) {
  auto shapes = llama_shapes();
  shapes["model.layers.0.mlp.up_proj.weight"] = {12, 8};
  const ShapesOnlyCheckpoint ckpt(llama_config(), shapes);
  try {
    Llama().plan(ckpt, cache(16));
    FAIL() << "a wrong up_proj shape was accepted";
  } catch (const llm2hef::BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("mlp.up_proj.weight"), std::string::npos) << e.what();
  }
}

// Applies what its info says and nothing else; describe() must not be reached.
class AppliesAttentionBias final : public DecoderAdapter {
 public:
  AdapterInfo info() const override { return {"test_applies", "0.0.0", "", {}, {}, {}, {"attention_bias"}}; }

 protected:
  DecoderModel describe(const Checkpoint&, const DescribeOptions&) const override {
    throw llm2hef::InternalError("describe() ran");
  }
};

TEST(DecoderModel, AKeyTheInfoDoesNotApplyIsRefusedBeforeDescribe) {
  // No sizes at all: the key must be refused first, from info().applied_keys.
  const ShapesOnlyCheckpoint softcapped(json{{"attn_logit_softcapping", 50.0}, {"attention_bias", true}}, {});
  try {
    AppliesAttentionBias().plan(softcapped, cache(16));
    FAIL() << "attn_logit_softcapping was accepted";
  } catch (const llm2hef::sdk::UnappliedForwardKey& e) {
    EXPECT_EQ(e.key(), "attn_logit_softcapping") << e.what();
  }
  // attention_bias is applied: describe() runs.
  const ShapesOnlyCheckpoint biased(json{{"attention_bias", true}}, {});
  EXPECT_THROW(AppliesAttentionBias().plan(biased, cache(16)), llm2hef::InternalError);
}

TEST(DecoderModel, ThePlanCarriesTheDescriptionToTheBuild) {
  const ShapesOnlyCheckpoint ckpt(llama_config(), llama_shapes());
  const Plan p = Llama().plan(ckpt, cache(16));
  ASSERT_NE(p.adapter_state, nullptr);
  const auto* m = static_cast<const DecoderModel*>(p.adapter_state.get());
  EXPECT_EQ(m->dims.intermediate, 16);
  EXPECT_EQ(p.dims.kv_heads, 1);
  EXPECT_EQ(p.theta.size(), 4u);  // head_dim entries: inv_freq twice

  Plan without_description = p;
  without_description.adapter_state.reset();
  const llm2hef::testing::TempDir dir;
  GraphBuilder g("test", dir / "model.onnx.data");
  EXPECT_THROW(Llama().build_graph(ckpt, without_description, g), llm2hef::InternalError);
}

// A Llama whose description limits its exact cache (as GPT-2's learned
// positions or LongRoPE's factors do) and records what for_cache() saw
// (describe() is given no cache: DescribeOptions has none).
class Limited final : public DecoderAdapter {
 public:
  int64_t limit = 0;
  mutable int64_t cache_seen_by_for_cache = -1;
  AdapterInfo info() const override { return {"test_limited", "0.0.0", "", {}, {}, {}}; }

 protected:
  DecoderModel describe(const Checkpoint& ckpt, const DescribeOptions&) const override {
    DecoderModel m = describe_llama_family(ckpt);
    m.largest_exact_cache = limit;
    m.largest_exact_cache_reason = "config.json: field 'positions': learned for 0.." + std::to_string(limit - 1);
    m.for_cache = [this](DecoderModel& d, int64_t n) {
      cache_seen_by_for_cache = n;
      d.notes.push_back("cache " + std::to_string(n));
    };
    return m;
  }
};

TEST(DecoderModel, TheCacheIsSettledFromTheDescriptionBeforeForCacheRuns) {
  json config = llama_config();
  config["max_position_embeddings"] = 512;
  const ShapesOnlyCheckpoint ckpt(config, llama_shapes());
  Limited a;
  a.limit = 100;
  // No --cache: the smallest of the runtime's 2048, max_positions and the
  // largest exact cache; for_cache() saw the chosen one.
  const Plan p = a.plan(ckpt, ExportOptions{});
  EXPECT_EQ(p.cache_size, 100);
  EXPECT_EQ(a.cache_seen_by_for_cache, 100);
  EXPECT_NE(std::find(p.notes.begin(), p.notes.end(), "cache 100"), p.notes.end());
  a.limit = 0;
  EXPECT_EQ(a.plan(ckpt, ExportOptions{}).cache_size, 512);
  config.erase("max_position_embeddings");
  EXPECT_EQ(a.plan(ShapesOnlyCheckpoint(config, llama_shapes()), ExportOptions{}).cache_size, kRuntimeDefaultCacheSize);

  // --cache given: kept up to the largest exact cache, refused beyond it with
  // the description's reason.
  a.limit = 100;
  EXPECT_EQ(a.plan(ckpt, cache(100)).cache_size, 100);
  try {
    a.plan(ckpt, cache(101));
    FAIL() << "a cache beyond the largest exact one was accepted";
  } catch (const llm2hef::Unsupported& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("field 'positions': learned for 0..99; --cache 101 is too large, the largest exact cache is "
                        "100 (pass --cache 100 or less)"),
              std::string::npos)
        << what;
  }
}

}  // namespace
