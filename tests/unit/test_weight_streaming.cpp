// Issue 31: weights converted by several threads, in blocks handed to the
// writer, must give the bytes one thread gives, whatever the block size:
// each layout stream_weight has (rows, a column range, a transpose gathered
// whole, a transpose in bands, a column range of a transpose, a scale) is
// written at 1 and 3 threads, with blocks small enough that the fixture-sized
// tensors cross many block boundaries, and checked against the plain
// definition of the view.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../../sdk/src/weight_streaming.hpp"
#include "llm2hef/sdk/background_file_writer.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;
namespace sdk = llm2hef::sdk;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "llm2hef-streaming-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

// Float32 matrices in memory; read_rows may be called from several threads.
class MatrixCheckpoint : public sdk::Checkpoint {
 public:
  void add(const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
    sdk::TensorInfo info;
    info.name = name;
    info.shape = std::move(shape);
    std::mt19937 rng(seed);
    std::vector<float> v(static_cast<size_t>(info.numel()));
    for (float& x : v) x = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    tensors_[name] = {info, std::move(v)};
  }
  const std::vector<float>& values(const std::string& name) const { return tensors_.at(name).second; }

  const fs::path& dir() const override { return dir_; }
  const sdk::JsonFile& config() const override { return json_; }
  const sdk::JsonFile& generation_config() const override { return json_; }
  const sdk::JsonFile& tokenizer_config() const override { return json_; }
  fs::path tokenizer_json() const override { return {}; }
  bool has(std::string_view t) const override { return tensors_.count(std::string(t)) != 0; }
  const sdk::TensorInfo& info(std::string_view t) const override { return tensors_.at(std::string(t)).first; }
  std::vector<std::string> tensor_names() const override { return {}; }
  void read_rows(std::string_view t, int64_t begin, int64_t end, std::span<float> out) const override {
    const auto& [info, v] = tensors_.at(std::string(t));
    const int64_t row = info.row_size();
    ASSERT_EQ(out.size(), static_cast<size_t>((end - begin) * row));
    std::copy(v.begin() + begin * row, v.begin() + end * row, out.begin());
  }

 private:
  fs::path dir_ = "memory";
  sdk::JsonFile json_;
  std::map<std::string, std::pair<sdk::TensorInfo, std::vector<float>>> tensors_;
};

std::vector<float> read_floats(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// The view by its definition: transpose, then columns [col_begin, col_end), times scale.
std::vector<float> expected(const MatrixCheckpoint& ckpt, const std::string& name, const sdk::WeightView& view,
                            float scale) {
  const sdk::TensorInfo& t = ckpt.info(name);
  const std::vector<float>& v = ckpt.values(name);
  const int64_t rows = t.shape.size() == 1 ? 1 : t.shape[0], cols = t.shape.size() == 1 ? t.shape[0] : t.shape[1];
  const int64_t out_rows = view.transpose ? cols : rows, out_cols = view.transpose ? rows : cols;
  const int64_t end = view.col_end < 0 ? out_cols : view.col_end;
  std::vector<float> out;
  for (int64_t i = 0; i < out_rows; ++i)
    for (int64_t j = view.col_begin; j < end; ++j)
      out.push_back((view.transpose ? v[j * cols + i] : v[i * cols + j]) * scale);
  return out;
}

struct Case {
  std::string tensor;
  sdk::WeightView view;
  float scale;
};

std::vector<float> stream(const MatrixCheckpoint& ckpt, const Case& c, unsigned threads, int64_t block_bytes,
                          const fs::path& path) {
  sdk::TaskPool pool(threads);
  std::vector<sdk::StreamScratch> scratch;
  {
    sdk::BackgroundFileWriter out(path, sdk::Writeback::as_written);
    const sdk::TensorInfo& t = ckpt.info(c.tensor);
    const sdk::WeightPlan plan = sdk::plan_weight(t, c.view);
    uint64_t done = 0;
    sdk::WeightTarget target{out, 0, c.scale, "w", [&](uint64_t d) { done = d; }, block_bytes};
    sdk::stream_weight(ckpt, t, plan, pool, scratch, target);
    out.close();
    int64_t n = 1;
    for (int64_t d : plan.out_shape) n *= d;
    EXPECT_EQ(done, static_cast<uint64_t>(n) * 4);
  }
  return read_floats(path);
}

}  // namespace

TEST(WeightStreaming, EveryLayoutIsTheSameAtAnyThreadCountAndBlockSize) {
  MatrixCheckpoint ckpt;
  ckpt.add("embed", {517, 24}, 1);   // a tied head: transposed, in bands
  ckpt.add("proj", {40, 36}, 2);     // [out, in] linear
  ckpt.add("fused", {24, 72}, 3);    // GPT-2's c_attn: column ranges
  ckpt.add("bias", {72}, 4);
  const std::vector<Case> cases = {
      {"embed", {true, 0, -1}, 1.0f},   {"embed", {true, 100, 300}, 1.0f}, {"embed", {false, 0, -1}, 0.5f},
      {"proj", {true, 0, -1}, 1.0f},    {"proj", {true, 0, -1}, 3.0f},     {"fused", {false, 24, 48}, 1.0f},
      {"fused", {false, 0, -1}, 1.0f},  {"fused", {true, 8, 20}, 2.0f},    {"bias", {false, 24, 48}, 1.0f},
  };
  TempDir dir;
  int k = 0;
  for (const Case& c : cases) {
    const std::vector<float> want = expected(ckpt, c.tensor, c.view, c.scale);
    for (unsigned threads : {1u, 3u})
      for (int64_t block : {int64_t{64}, int64_t{1000}, int64_t{4096}, sdk::kStreamBlockBytes}) {
        const std::vector<float> got = stream(ckpt, c, threads, block, dir.path / std::to_string(k++));
        EXPECT_TRUE(got == want) << c.tensor << " transpose " << c.view.transpose << " columns [" << c.view.col_begin
                                 << ", " << c.view.col_end << ") scale " << c.scale << ", " << threads
                                 << " threads, blocks of " << block << " bytes";
      }
  }
}

// A scale that overflows fails the same way whichever thread meets it.
TEST(WeightStreaming, AnOverflowingScaleIsReportedAtAnyThreadCount) {
  MatrixCheckpoint ckpt;
  ckpt.add("proj", {40, 36}, 2);
  TempDir dir;
  for (unsigned threads : {1u, 3u}) {
    try {
      stream(ckpt, {"proj", {true, 0, -1}, 3e38f}, threads, 256, dir.path / "x");
      FAIL() << "no error";
    } catch (const llm2hef::InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("overflows float32"), std::string::npos) << e.what();
    }
  }
}
