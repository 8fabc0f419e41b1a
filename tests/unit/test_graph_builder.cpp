// The graph builder writes nodes, initializers and external-data bytes in the
// order its calls are made (issue 13 item 5: exports are deterministic by
// construction once every call is its own statement).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace llm2hef::sdk;
using llm2hef::testing::TempDir;

namespace {

onnx::ModelProto load(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&in)) << p;
  return m;
}

std::string external_field(const onnx::TensorProto& t, const std::string& key) {
  for (const auto& e : t.external_data())
    if (e.key() == key) return e.value();
  return "";
}

}  // namespace

TEST(GraphBuilder, InitializersNodesAndDataFollowCallOrder) {
  TempDir tmp;
  std::vector<std::string> want_inits, want_nodes;
  {
    GraphBuilder g("order", tmp.path() / "model.onnx.data");
    auto s = g.scope("m");
    const Value x = g.input("x", {1, 2048});
    // Interleaved on purpose: a scalar, a large (external) constant, another
    // scalar, a large generated constant, ops in between.
    const Value zulu = g.scalar("zulu", 1.0f);
    want_inits.push_back("m.zulu");
    const std::vector<float> big(2048, 0.5f);
    const Value yankee = g.constant("yankee", {2048}, big);
    want_inits.push_back("m.yankee");
    const Value sum = g.add(x, yankee, "b_add");
    want_nodes.push_back("/m/b_add");
    const Value alpha = g.scalar("alpha", 2.0f);
    want_inits.push_back("m.alpha");
    const Value prod = g.mul(sum, alpha, "a_mul");
    want_nodes.push_back("/m/a_mul");
    const Value xray = g.constant_rows("xray", {2048, 2}, [](int64_t r0, int64_t r1, std::span<float> out) {
      for (int64_t r = r0; r < r1; ++r) out[static_cast<size_t>((r - r0) * 2)] = static_cast<float>(r);
    });
    want_inits.push_back("m.xray");
    const Value proj = g.matmul(g.add(prod, zulu, "c_add"), xray, "d_matmul");
    want_nodes.push_back("/m/c_add");
    want_nodes.push_back("/m/d_matmul");
    g.output(proj, "y");
    g.save(tmp.path() / "model.onnx", {});
  }
  const onnx::ModelProto m = load(tmp.path() / "model.onnx");
  std::vector<std::string> inits, nodes;
  for (const auto& t : m.graph().initializer()) inits.push_back(t.name());
  for (const auto& n : m.graph().node()) nodes.push_back(n.name());
  EXPECT_EQ(inits, want_inits);
  EXPECT_EQ(nodes, want_nodes);

  // The two external tensors sit in the data file in call order.
  const auto& inits_pb = m.graph().initializer();
  ASSERT_EQ(inits_pb.size(), 4);
  EXPECT_EQ(inits_pb[1].data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(inits_pb[3].data_location(), onnx::TensorProto::EXTERNAL);
  const uint64_t first = std::stoull(external_field(inits_pb[1], "offset"));
  const uint64_t second = std::stoull(external_field(inits_pb[3], "offset"));
  EXPECT_EQ(first, 0u);
  EXPECT_GE(second, first + 2048 * 4);
  EXPECT_EQ(fs::file_size(tmp.path() / "model.onnx.data"), second + 2048 * 2 * 4);
}

// A generated constant of rank 4 (the sliding-window band [1, heads, S, S])
// streams row block by row block like a matrix: its rows are every index of
// the leading axes, each the last axis long.
TEST(GraphBuilder, RankFourConstantRowsStreamOverTheLeadingAxes) {
  TempDir tmp;
  constexpr int64_t kHeads = 3, kSeq = 1024;  // 12 MiB: more than one 8 MiB block
  std::vector<std::pair<int64_t, int64_t>> calls;
  {
    GraphBuilder g("rows", tmp.path() / "model.onnx.data");
    const Value x = g.input("x", {1, kHeads, kSeq, kSeq});
    const Value band =
        g.constant_rows("band", {1, kHeads, kSeq, kSeq}, [&](int64_t r0, int64_t r1, std::span<float> out) {
          calls.emplace_back(r0, r1);
          ASSERT_EQ(out.size(), static_cast<size_t>((r1 - r0) * kSeq));
          for (int64_t r = r0; r < r1; ++r)
            out[static_cast<size_t>((r - r0) * kSeq + r % kSeq)] = static_cast<float>(r);
        });
    EXPECT_EQ(band.shape, (std::vector<int64_t>{1, kHeads, kSeq, kSeq}));
    g.output(g.add(x, band, "add"), "y");
    g.save(tmp.path() / "model.onnx", {});
  }
  ASSERT_GE(calls.size(), 2u);
  EXPECT_EQ(calls.front().first, 0);
  EXPECT_EQ(calls.back().second, kHeads * kSeq);
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_EQ(calls[i].first, calls[i - 1].second);
  // Row r = (head, query) holds r at column r % S: check one row per head.
  ASSERT_EQ(fs::file_size(tmp.path() / "model.onnx.data"), static_cast<uintmax_t>(kHeads * kSeq * kSeq * 4));
  std::ifstream data(tmp.path() / "model.onnx.data", std::ios::binary);
  for (const int64_t r : {int64_t{5}, kSeq + 700, 2 * kSeq + kSeq - 1}) {
    float v = 0;
    data.seekg(static_cast<std::streamoff>((r * kSeq + r % kSeq) * 4));
    data.read(reinterpret_cast<char*>(&v), sizeof v);
    EXPECT_EQ(v, static_cast<float>(r)) << "row " << r;
  }
}

// ---- weights streamed from a checkpoint ----------------------------------

namespace {

// One [rows, cols] F32 tensor "w" whose element (r, c) is r * cols + c
// (exact in float32 below 2^24), counting the rows each read_rows call asks.
class CountingCheckpoint final : public Checkpoint {
 public:
  CountingCheckpoint(int64_t rows, int64_t cols) {
    info_.name = "w";
    info_.shape = {rows, cols};
  }
  const fs::path& dir() const override { return dir_; }
  const JsonFile& config() const override { return empty_; }
  const JsonFile& generation_config() const override { return empty_; }
  const JsonFile& tokenizer_config() const override { return empty_; }
  fs::path tokenizer_json() const override { return {}; }
  bool has(std::string_view t) const override { return t == "w"; }
  const TensorInfo& info(std::string_view) const override { return info_; }
  std::vector<std::string> tensor_names() const override { return {"w"}; }
  void read_rows(std::string_view, int64_t b, int64_t e, std::span<float> out) const override {
    const int64_t cols = info_.shape[1];
    for (int64_t r = b; r < e; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[static_cast<size_t>((r - b) * cols + c)] = static_cast<float>(r * cols + c);
    rows_read += e - b;
  }
  mutable int64_t rows_read = 0;

 private:
  TensorInfo info_;
  fs::path dir_ = "memory";
  JsonFile empty_;
};

// Output row j of a transposed view holds source column j over source rows
// [col_begin, col_end); every source row is read exactly once.
void expect_transposed_once(int64_t rows, int64_t cols, int64_t col_begin, int64_t col_end) {
  TempDir tmp;
  CountingCheckpoint ckpt(rows, cols);
  {
    GraphBuilder g("t", tmp.path() / "model.onnx.data");
    auto s = g.scope("m");
    const Value x = g.input("x", {1, col_end - col_begin});
    const Value w = g.weight("w", ckpt, "w", WeightView{true, col_begin, col_end});
    EXPECT_EQ(w.shape, (std::vector<int64_t>{cols, col_end - col_begin}));
    g.output(g.matmul(w, g.transpose(x, {1, 0})), "y");
    g.save(tmp.path() / "model.onnx", {});
  }
  EXPECT_EQ(ckpt.rows_read, col_end - col_begin);
  const int64_t width = col_end - col_begin;
  std::ifstream in(tmp.path() / "model.onnx.data", std::ios::binary);
  std::vector<float> data(static_cast<size_t>(cols * width));
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  ASSERT_TRUE(in) << "model.onnx.data shorter than the weight";
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t k = 0; k < width; ++k)
      ASSERT_EQ(data[static_cast<size_t>(j * width + k)], static_cast<float>((col_begin + k) * cols + j))
          << "output row " << j << ", column " << k;
}

}  // namespace

TEST(GraphBuilder, SmallTransposedWeightIsReadOnce) { expect_transposed_once(300, 70, 0, 300); }

// Larger than the 16 MB streaming budget: read in chunks of source rows, each
// chunk's columns written into place.
TEST(GraphBuilder, LargeTransposedWeightIsReadOnceAndLandsInPlace) { expect_transposed_once(4200, 2100, 100, 4150); }

// Issue 30 item 2: every float constant the builder writes comes from config
// values; a NaN or an infinity there is an internal error naming the node,
// raised before the constant is written (the checkpoint's own weights are
// reported separately, as nonfinite_weights).
TEST(GraphBuilder, NonFiniteConstantIsAnInternalErrorNamingTheNode) {
  TempDir tmp;
  GraphBuilder g("nonfinite", tmp.path() / "model.onnx.data");
  auto s = g.scope("m");
  const auto expect_refused = [](auto&& write, const std::string& node) {
    try {
      write();
      FAIL() << node << ": no error";
    } catch (const llm2hef::InternalError& e) {
      EXPECT_NE(std::string(e.what()).find(node), std::string::npos) << e.what();
    }
  };
  expect_refused([&] { g.scalar("eps", std::numeric_limits<float>::quiet_NaN()); }, "m.eps");
  const std::vector<float> inf_at_end{1.0f, 2.0f, std::numeric_limits<float>::infinity()};
  expect_refused([&] { g.constant("theta", {3}, inf_at_end); }, "m.theta");
  // Large enough to be written externally, row block by row block.
  expect_refused(
      [&] {
        g.constant_rows("mask", {2048, 2}, [](int64_t r0, int64_t r1, std::span<float> out) {
          for (int64_t r = r0; r < r1; ++r) out[static_cast<size_t>((r - r0) * 2)] = r == 2000 ? -INFINITY : 0.0f;
        });
      },
      "m.mask");
  const Value x = g.input("x", {1, 4});
  const Value ones = g.constant("ones", {4}, std::vector<float>(4, 1.0f));
  const Value zeros = g.constant("zeros", {4}, std::vector<float>(4, 0.0f));
  expect_refused([&] { g.layer_normalization(x, ones, zeros, -1e-5f, "ln"); }, "/m/ln");
}
