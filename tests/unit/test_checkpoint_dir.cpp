// Checkpoint folders: single-file and sharded weights, the optional JSON
// files, and every way a folder or an index can be broken.
// Suite names are lower-case so that `ctest -R "safetensors|checkpoint"` picks them.
#include <gtest/gtest.h>

#include "llm2hef/core/checkpoint/checkpoint_dir.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "safetensors_test_util.hpp"

using namespace llm2hef;
using namespace llm2hef::testing;
using Json = nlohmann::json;

namespace {

const std::string kConfig = R"({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 4})";

// Folder with config.json and, unless `weights` is empty, model.safetensors.
void make_dir(const fs::path& dir, const std::vector<TestTensor>& weights) {
  fs::create_directories(dir);
  write_text(dir / "config.json", kConfig);
  if (!weights.empty()) write_file(dir / "model.safetensors", make_safetensors(weights));
}

std::vector<float> iota(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

// Two shards and the index naming them.
void make_sharded(const fs::path& dir, Json weight_map = nullptr) {
  make_dir(dir, {});
  write_file(dir / "model-00001-of-00002.safetensors",
             make_safetensors({f32_tensor("wte.weight", {3, 2}, iota(6, 0)), f32_tensor("ln_f.bias", {2}, {7, 8})}));
  std::vector<uint16_t> half = {0x3c00, 0x4000, 0x4200, 0x4400};  // 1 2 3 4
  write_file(dir / "model-00002-of-00002.safetensors",
             make_safetensors({{"h.0.mlp.c_fc.weight", "F16", {2, 2}, to_bytes(half)}}));
  if (weight_map.is_null())
    weight_map = {{"wte.weight", "model-00001-of-00002.safetensors"},
                  {"ln_f.bias", "model-00001-of-00002.safetensors"},
                  {"h.0.mlp.c_fc.weight", "model-00002-of-00002.safetensors"}};
  write_text(dir / "model.safetensors.index.json",
             Json{{"metadata", {{"total_size", 40}}}, {"weight_map", weight_map}}.dump());
}

// Opening `dir` must fail with BadInput mentioning every one of `parts`.
void expect_bad(const fs::path& dir, std::vector<std::string> parts) {
  try {
    core::open_checkpoint(dir);
    FAIL() << "opened a broken checkpoint";
  } catch (const BadInput& e) {
    const std::string m = e.what();
    for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  }
}

}  // namespace

TEST(checkpointDir, SingleFile) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {f32_tensor("wte.weight", {3, 2}, iota(6, 1)), f32_tensor("ln_f.weight", {2}, {1, 1})});
  auto ck = core::open_checkpoint(dir);
  EXPECT_EQ(ck->dir(), dir);
  EXPECT_EQ(ck->config().get_string("model_type"), "gpt2");
  EXPECT_EQ(ck->config().origin(), (dir / "config.json").string());
  EXPECT_TRUE(ck->generation_config().empty());
  EXPECT_TRUE(ck->tokenizer_config().empty());
  EXPECT_TRUE(ck->tokenizer_json().empty());
  EXPECT_EQ(ck->tensor_names(), (std::vector<std::string>{"ln_f.weight", "wte.weight"}));
  EXPECT_TRUE(ck->has("wte.weight"));
  EXPECT_FALSE(ck->has("lm_head.weight"));

  const auto& ti = ck->info("wte.weight");
  EXPECT_EQ(ti.name, "wte.weight");
  EXPECT_EQ(ti.dtype, sdk::DType::f32);
  EXPECT_EQ(ti.dtype_text, "F32");
  EXPECT_EQ(ti.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(ti.file, dir / "model.safetensors");
  EXPECT_EQ(ti.rows(), 3);
  EXPECT_EQ(ti.row_size(), 2);

  std::vector<float> row(2);
  ck->read_rows("wte.weight", 2, 3, row);
  EXPECT_EQ(row, (std::vector<float>{5, 6}));
  EXPECT_EQ(ck->read("wte.weight"), iota(6, 1));
  EXPECT_NO_THROW(ck->expect("wte.weight", {3, 2}));
  EXPECT_THROW(ck->expect("wte.weight", {2, 3}), BadInput);

  try {
    ck->info("lm_head.weight");
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() + ": tensor 'lm_head.weight' not found in the checkpoint");
  }
  EXPECT_THROW(ck->read_rows("lm_head.weight", 0, 1, row), BadInput);
}

TEST(checkpointDir, OptionalFiles) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {f32_tensor("x", {1}, {1})});
  write_text(dir / "generation_config.json", R"({"bos_token_id": 50256, "eos_token_id": [50256, 50257]})");
  write_text(dir / "tokenizer_config.json", R"({"chat_template": "{{ messages }}"})");
  write_text(dir / "tokenizer.json", "{}");
  auto ck = core::open_checkpoint(dir);
  EXPECT_EQ(ck->generation_config().get_int("bos_token_id"), 50256);
  EXPECT_EQ(ck->generation_config().find_int_list("eos_token_id")->size(), 2u);
  EXPECT_EQ(ck->tokenizer_config().get_string("chat_template"), "{{ messages }}");
  EXPECT_EQ(ck->tokenizer_json(), dir / "tokenizer.json");

  write_text(dir / "generation_config.json", "{oops");
  expect_bad(dir, {"generation_config.json", "not valid JSON"});
}

TEST(checkpointDir, Sharded) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir);
  auto ck = core::open_checkpoint(dir);
  EXPECT_EQ(ck->tensor_names().size(), 3u);
  EXPECT_EQ(ck->info("h.0.mlp.c_fc.weight").file, dir / "model-00002-of-00002.safetensors");
  EXPECT_EQ(ck->info("h.0.mlp.c_fc.weight").dtype, sdk::DType::f16);
  EXPECT_EQ(ck->read("h.0.mlp.c_fc.weight"), (std::vector<float>{1, 2, 3, 4}));
  std::vector<float> rows(4);
  ck->read_rows("wte.weight", 1, 3, rows);
  EXPECT_EQ(rows, (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(ck->read("ln_f.bias"), (std::vector<float>{7, 8}));
}

TEST(checkpointDir, SingleFileWinsOverIndex) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir);
  write_file(dir / "model.safetensors", make_safetensors({f32_tensor("only", {1}, {9})}));
  auto ck = core::open_checkpoint(dir);
  EXPECT_EQ(ck->tensor_names(), (std::vector<std::string>{"only"}));
}

TEST(checkpointDirBroken, Folder) {
  TempDir tmp;
  expect_bad(tmp / "absent", {"absent", "no such folder"});
  write_text(tmp / "file", "x");
  expect_bad(tmp / "file", {"file", "not a folder"});
  fs::create_directories(tmp / "empty");
  expect_bad(tmp / "empty", {(tmp / "empty").string() + ": not a checkpoint folder: config.json is missing"});
}

TEST(checkpointDirBroken, Config) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {f32_tensor("x", {1}, {1})});
  write_text(dir / "config.json", "{\"model_type\": ");
  expect_bad(dir, {"config.json", "not valid JSON"});
  write_text(dir / "config.json", "[1]");
  expect_bad(dir, {"config.json", "object"});
}

TEST(checkpointDirBroken, NoWeights) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {});
  expect_bad(dir, {dir.string(), "neither model.safetensors nor model.safetensors.index.json"});
  write_text(dir / "pytorch_model.bin", "x");
  expect_bad(dir, {dir.string(), "pytorch_model.bin"});
}

TEST(checkpointDirBroken, BadWeightsFileNamesFileAndTensor) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {});
  Json h = {{"h.0.ln_1.weight", {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {0, 12}}}}};
  write_file(dir / "model.safetensors", raw_safetensors(h.dump(), Bytes(16)));
  expect_bad(dir, {(dir / "model.safetensors").string(), "tensor 'h.0.ln_1.weight'"});
  write_file(dir / "model.safetensors", Bytes(4));
  expect_bad(dir, {(dir / "model.safetensors").string(), "too short"});
}

TEST(checkpointDirBroken, UnreadableDtypeFailsOnRead) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_dir(dir, {{"wte.weight", "F64", {2}, Bytes(16)}});
  auto ck = core::open_checkpoint(dir);  // opening is fine: inspect can still list it
  EXPECT_EQ(ck->info("wte.weight").dtype, sdk::DType::other);
  EXPECT_EQ(ck->info("wte.weight").dtype_text, "F64");
  try {
    ck->read("wte.weight");
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              (dir / "model.safetensors").string() +
                  ": tensor 'wte.weight' has dtype F64; only F32, F16 and BF16 weights can be read");
  }
}

TEST(checkpointDirBroken, Index) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  const std::string index = (dir / "model.safetensors.index.json").string();
  make_sharded(dir);

  write_text(index, "{not json");
  expect_bad(dir, {index, "not valid JSON"});
  write_text(index, R"({"metadata": {}})");
  expect_bad(dir, {index, "weight_map", "missing"});
  write_text(index, R"({"weight_map": ["a"]})");
  expect_bad(dir, {index, "weight_map"});
  write_text(index, R"({"weight_map": {}})");
  expect_bad(dir, {index, "weight_map", "no tensors"});
  write_text(index, R"({"weight_map": {"wte.weight": 3}})");
  expect_bad(dir, {index, "tensor 'wte.weight'"});
}

TEST(checkpointDirBroken, ShardPathsStayInside) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  const std::string abs = (dir / "model-00001-of-00002.safetensors").string();
  for (const std::string& bad : {abs, std::string("../ckpt/model-00001-of-00002.safetensors"),
                                 std::string("sub/../model-00001-of-00002.safetensors"), std::string("")}) {
    make_sharded(dir, {{"wte.weight", bad},
                       {"ln_f.bias", "model-00001-of-00002.safetensors"},
                       {"h.0.mlp.c_fc.weight", "model-00002-of-00002.safetensors"}});
    expect_bad(dir, {"model.safetensors.index.json", "tensor 'wte.weight'", "'" + bad + "'",
                     "not a plain file name inside the checkpoint folder"});
  }
}

TEST(checkpointDirBroken, MissingShard) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  expect_bad(dir, {"model.safetensors.index.json", (dir / "model-00002-of-00002.safetensors").string(),
                   "does not exist", "h.0.mlp.c_fc.weight"});
}

TEST(checkpointDirBroken, TensorMissingFromItsShard) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir, {{"wte.weight", "model-00001-of-00002.safetensors"},
                     {"ln_f.bias", "model-00001-of-00002.safetensors"},
                     {"ln_f.weight", "model-00002-of-00002.safetensors"},
                     {"h.0.mlp.c_fc.weight", "model-00002-of-00002.safetensors"}});
  expect_bad(dir, {"model.safetensors.index.json", "tensor 'ln_f.weight'",
                   (dir / "model-00002-of-00002.safetensors").string(), "does not contain it"});
  // Mapped to the wrong shard: it exists, but elsewhere.
  make_sharded(dir, {{"wte.weight", "model-00002-of-00002.safetensors"},
                     {"ln_f.bias", "model-00001-of-00002.safetensors"},
                     {"h.0.mlp.c_fc.weight", "model-00002-of-00002.safetensors"}});
  expect_bad(dir, {"tensor 'wte.weight'", (dir / "model-00002-of-00002.safetensors").string(), "does not contain it"});
}

TEST(checkpointDirBroken, TensorInTwoShards) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir);
  write_file(dir / "model-00002-of-00002.safetensors",
             make_safetensors({{"h.0.mlp.c_fc.weight", "F16", {2}, Bytes(4)}, f32_tensor("ln_f.bias", {2}, {0, 0})}));
  expect_bad(dir, {"tensor 'ln_f.bias'", "present in both", "model-00001-of-00002.safetensors",
                   "model-00002-of-00002.safetensors"});
}

TEST(checkpointDirBroken, BadShardNamesShard) {
  TempDir tmp;
  const fs::path dir = tmp / "ckpt";
  make_sharded(dir);
  Json h = {{"h.0.mlp.c_fc.weight", {{"dtype", "F16"}, {"shape", {2, 2}}, {"data_offsets", {0, 8}}}}};
  write_file(dir / "model-00002-of-00002.safetensors", raw_safetensors(h.dump(), Bytes(6)));
  expect_bad(dir,
             {(dir / "model-00002-of-00002.safetensors").string(), "tensor 'h.0.mlp.c_fc.weight'", "run past the end"});
}
