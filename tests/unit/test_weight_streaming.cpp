// Issue 31: weights converted by several threads, in blocks handed to the
// writer, must give the bytes one thread gives, whatever the block size:
// each layout stream_weight has (rows, a column range, a transpose gathered
// whole, a transpose in bands, a column range of a transpose, a scale) is
// written at 1 and 3 threads, with blocks small enough that the fixture-sized
// tensors cross many block boundaries, and checked against the plain
// definition of the view; with a checkpoint that copies its rows out and with
// one that lends float32 rows from its storage (aligned or not), which are
// written or transposed without a copy and must all be given back.
#include <gtest/gtest.h>

#include <atomic>
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
#include "temp_dir.hpp"

namespace fs = std::filesystem;
namespace sdk = llm2hef::sdk;
using llm2hef::testing::TempDir;

namespace {

// How a MatrixCheckpoint offers its float32 values besides read_rows.
enum class Stored {
  no,         // read_rows only (a GGUF, a BF16 safetensors)
  aligned,    // stored_f32_rows too, 4-byte aligned (safetensors F32)
  unaligned,  // stored_f32_rows at an odd address (a header of odd length)
};

// Float32 matrices in memory; read_rows and stored_f32_rows may be called
// from several threads, release_stored from the writer's.
class MatrixCheckpoint : public sdk::Checkpoint {
 public:
  explicit MatrixCheckpoint(Stored stored = Stored::no) : stored_(stored) {}
  void add(const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
    sdk::TensorInfo info;
    info.name = name;
    info.shape = std::move(shape);
    std::mt19937 rng(seed);
    std::vector<float> v(static_cast<size_t>(info.numel()));
    for (float& x : v) x = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
    std::vector<char>& bytes = stored_bytes_[name];
    bytes.assign(v.size() * 4 + 1, 0);
    std::memcpy(bytes.data() + shift(), v.data(), v.size() * 4);
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
  std::span<const char> stored_f32_rows(std::string_view t, int64_t begin, int64_t end) const override {
    if (stored_ == Stored::no) return {};
    const int64_t row = info(t).row_size();
    const std::vector<char>& bytes = stored_bytes_.at(std::string(t));
    const size_t n = static_cast<size_t>((end - begin) * row) * 4;
    lent_ += n;
    return {bytes.data() + shift() + static_cast<size_t>(begin * row) * 4, n};
  }
  void release_stored(std::span<const char> rows) const override { released_ += rows.size(); }

  size_t lent() const { return lent_; }
  size_t released() const { return released_; }

 private:
  size_t shift() const { return stored_ == Stored::unaligned ? 1 : 0; }

  Stored stored_;
  std::map<std::string, std::vector<char>> stored_bytes_;
  mutable std::atomic<size_t> lent_{0}, released_{0};
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

// Every layout, whether the checkpoint's float32 rows are written straight
// from its storage (issue 31) or copied into blocks: the same bytes.
TEST(WeightStreaming, EveryLayoutIsTheSameAtAnyThreadCountAndBlockSize) {
  const std::vector<Case> cases = {
      {"embed", {true, 0, -1}, 1.0f},  {"embed", {true, 100, 300}, 1.0f}, {"embed", {false, 0, -1}, 0.5f},
      {"proj", {true, 0, -1}, 1.0f},   {"proj", {true, 0, -1}, 3.0f},     {"fused", {false, 24, 48}, 1.0f},
      {"fused", {false, 0, -1}, 1.0f}, {"fused", {true, 8, 20}, 2.0f},    {"bias", {false, 24, 48}, 1.0f},
      {"embed", {false, 0, -1}, 1.0f},
  };
  TempDir dir;
  int k = 0;
  for (Stored stored : {Stored::no, Stored::aligned, Stored::unaligned}) {
    MatrixCheckpoint ckpt(stored);
    ckpt.add("embed", {517, 24}, 1);  // a tied head: transposed, in bands
    ckpt.add("proj", {40, 36}, 2);    // [out, in] linear
    ckpt.add("fused", {24, 72}, 3);   // GPT-2's c_attn: column ranges
    ckpt.add("bias", {72}, 4);
    for (const Case& c : cases) {
      const std::vector<float> want = expected(ckpt, c.tensor, c.view, c.scale);
      for (unsigned threads : {1u, 3u})
        for (int64_t block : {int64_t{64}, int64_t{1000}, int64_t{4096}, sdk::kStreamBlockBytes}) {
          const std::vector<float> got = stream(ckpt, c, threads, block, dir / std::to_string(k++));
          EXPECT_TRUE(got == want) << c.tensor << " transpose " << c.view.transpose << " columns [" << c.view.col_begin
                                   << ", " << c.view.col_end << ") scale " << c.scale << ", " << threads
                                   << " threads, blocks of " << block << " bytes, stored " << static_cast<int>(stored);
        }
    }
    // Stored rows were used (unscaled, untransposed ones always; transposed
    // ones when aligned), and every byte lent was given back once written.
    EXPECT_EQ(ckpt.lent() > 0, stored != Stored::no);
    EXPECT_EQ(ckpt.released(), ckpt.lent());
  }
}

// Stored rows whose writing fails are still given back: the writer tells
// the checkpoint once the file is lost, not only once written.
TEST(WeightStreaming, StoredRowsAreReleasedWhenTheWriteFails) {
  MatrixCheckpoint ckpt(Stored::aligned);
  ckpt.add("proj", {400, 36}, 2);
  sdk::TaskPool pool(2);
  std::vector<sdk::StreamScratch> scratch;
  {
    // /dev/full: every write fails with ENOSPC.
    sdk::BackgroundFileWriter out("/dev/full");
    const sdk::TensorInfo& t = ckpt.info("proj");
    const sdk::WeightPlan plan = sdk::plan_weight(t, {false, 0, -1});
    sdk::WeightTarget target{out, 0, 1.0f, "w", nullptr, 256};
    EXPECT_THROW(
        {
          sdk::stream_weight(ckpt, t, plan, pool, scratch, target);
          out.close();
        },
        llm2hef::BadInput);
  }
  EXPECT_GT(ckpt.lent(), 0u);
  EXPECT_EQ(ckpt.released(), ckpt.lent());
}

// A scale that overflows fails the same way whichever thread meets it.
TEST(WeightStreaming, AnOverflowingScaleIsReportedAtAnyThreadCount) {
  MatrixCheckpoint ckpt;
  ckpt.add("proj", {40, 36}, 2);
  TempDir dir;
  for (unsigned threads : {1u, 3u}) {
    try {
      stream(ckpt, {"proj", {true, 0, -1}, 3e38f}, threads, 256, dir / "x");
      FAIL() << "no error";
    } catch (const llm2hef::InternalError& e) {
      EXPECT_NE(std::string(e.what()).find("overflows float32"), std::string::npos) << e.what();
    }
  }
}
