// The graph builder writes nodes, initializers and external-data bytes in the
// order its calls are made (issue 13 item 5: exports are deterministic by
// construction once every call is its own statement).
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "llm2hef/sdk/graph_builder.hpp"

namespace fs = std::filesystem;
using namespace llm2hef::sdk;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "llm2hef-builder-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

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
    GraphBuilder g("order", tmp.path / "model.onnx.data");
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
    g.save(tmp.path / "model.onnx", {});
  }
  const onnx::ModelProto m = load(tmp.path / "model.onnx");
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
  EXPECT_EQ(fs::file_size(tmp.path / "model.onnx.data"), second + 2048 * 2 * 4);
}
