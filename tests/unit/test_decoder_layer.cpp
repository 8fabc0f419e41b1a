// One decoder layer, described (sdk/decoder_layer.hpp): each body kind
// declares the rows it reads and builds its nodes, dispatched by the layer;
// a custom body declares what it carries; a per-graph input (the short
// conv's shifts, families/short_conv.hpp) is made once, before the layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "llm2hef/families/short_conv.hpp"
#include "llm2hef/sdk/decoder_layer.hpp"
#include "llm2hef/sdk/decoder_model.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "temp_dir.hpp"

namespace {

using namespace llm2hef::sdk;
using llm2hef::families::short_conv_body;
using llm2hef::families::ShortConvSpec;
using llm2hef::testing::TempDir;

// Named tensors of given shapes, every value 0.5.
class MemoryCheckpoint final : public Checkpoint {
 public:
  explicit MemoryCheckpoint(std::map<std::string, std::vector<int64_t>> shapes) {
    for (auto& [name, shape] : shapes)
      tensors_[name] = TensorInfo{name, DType::f32, "F32", shape, "memory/model.safetensors"};
  }
  const std::filesystem::path& dir() const override { return dir_; }
  const JsonFile& config() const override { return empty_; }
  const JsonFile& generation_config() const override { return empty_; }
  const JsonFile& tokenizer_config() const override { return empty_; }
  std::filesystem::path tokenizer_json() const override { return {}; }
  bool has(std::string_view t) const override { return tensors_.count(std::string(t)) > 0; }
  const TensorInfo& info(std::string_view t) const override { return tensors_.at(std::string(t)); }
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& [name, info] : tensors_) names.push_back(name);
    return names;
  }
  void read_rows(std::string_view, int64_t, int64_t, std::span<float> out) const override {
    for (float& v : out) v = 0.5f;
  }

 private:
  std::filesystem::path dir_ = "memory";
  JsonFile empty_;
  std::map<std::string, TensorInfo> tensors_;
};

constexpr int64_t kHidden = 4, kIntermediate = 6;
const ModelDims kDims{kHidden, 1, 10, 2, 1, 2, kIntermediate};

NormSpec rms(const std::string& name) { return {name, name + ".weight", std::nullopt, 1e-6f}; }

std::vector<std::string> row_names(const LayerDescription& layer) {
  TensorTable t;
  declare_layer(t, kDims, layer);
  std::vector<std::string> names;
  for (const TensorRow& r : t.rows()) names.push_back(r.name);
  return names;
}

// x * 2 in its own scope, and the name of the input it was given.
CustomBody doubling(std::string* input_seen) {
  CustomBody body;
  body.tensors.add("custom.weight", {kHidden});
  body.build = [input_seen](GraphBuilder& g, const DecoderContext&, const Value& x) {
    if (input_seen) *input_seen = x.name;
    return g.mul(x, g.scalar("two", 2.0f));
  };
  return body;
}

SwigluSpec swiglu() { return {"gate.weight", "up.weight", "down.weight", "gate_proj", "up_proj", "down_proj"}; }

std::map<std::string, std::vector<int64_t>> shapes_of(const LayerDescription& layer) {
  TensorTable t;
  declare_layer(t, kDims, layer);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const TensorRow& r : t.rows()) shapes[r.name] = r.shape;
  return shapes;
}

// The layer built on an input [1, 3, hidden]: the names of its nodes, in order.
std::vector<std::string> built_nodes(const LayerDescription& layer) {
  TempDir tmp;
  const MemoryCheckpoint ckpt(shapes_of(layer));
  const DecoderInputs io{};
  {
    GraphBuilder g("layer", tmp.path() / "model.onnx.data");
    const Plan plan;
    const DecoderModel model;
    DecoderContext ctx(ckpt, io, plan, model, {});
    ctx.layer = 0;
    const Value x = g.input("x", {1, 3, kHidden});
    auto s = g.scope("layers.0");
    g.output(build_layer(g, ctx, x, layer), "y");
    g.save(tmp.path() / "model.onnx", {});
  }
  std::ifstream in(tmp.path() / "model.onnx", std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&in));
  std::vector<std::string> nodes;
  for (const auto& n : m.graph().node()) nodes.push_back(n.name());
  return nodes;
}

TEST(DecoderLayer, EachBodyKindDeclaresTheRowsItReads) {
  ShortConvSpec conv{"conv.in_proj.weight",
                     "conv.conv.weight",
                     "conv.out_proj.weight",
                     std::nullopt,
                     "conv.conv.bias",
                     std::nullopt,
                     kHidden,
                     3};
  LayerDescription layer{{rms("operator_norm"), "conv", short_conv_body(conv), "operator_residual"},
                         {rms("ffn_norm"), "mlp", GegluMlp{swiglu()}, "ffn_residual"}};
  EXPECT_EQ(row_names(layer), (std::vector<std::string>{"operator_norm.weight", "conv.in_proj.weight",
                                                        "conv.conv.weight", "conv.out_proj.weight", "conv.conv.bias",
                                                        "ffn_norm.weight", "gate.weight", "up.weight", "down.weight"}));
  EXPECT_EQ(shapes_of(layer)["conv.conv.weight"], (std::vector<int64_t>{kHidden, 1, 3}));

  layer.mixer.body = AttentionMixer{{.prefix = "attn.", .out_proj = "o_proj", .out_bias = true}};
  layer.ffn.body = ReluMlpSpec{{"fc1.weight", "fc1.bias"}, {"fc2.weight", std::nullopt}, "fc1", "fc2"};
  EXPECT_EQ(row_names(layer),
            (std::vector<std::string>{"operator_norm.weight", "attn.q_proj.weight", "attn.k_proj.weight",
                                      "attn.v_proj.weight", "attn.o_proj.weight", "attn.o_proj.bias", "ffn_norm.weight",
                                      "fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_EQ(shapes_of(layer)["fc1.weight"], (std::vector<int64_t>{kIntermediate, kHidden}));
}

TEST(DecoderLayer, ACustomBodyDeclaresTheRowsItCarries) {
  const LayerDescription layer{{rms("ln_1"), "attn", doubling(nullptr), "attn_residual"},
                               {rms("ln_2"), "mlp", swiglu(), "mlp_residual"}};
  EXPECT_EQ(row_names(layer), (std::vector<std::string>{"ln_1.weight", "custom.weight", "ln_2.weight", "gate.weight",
                                                        "up.weight", "down.weight"}));
}

TEST(DecoderLayer, ABodyIsBuiltInItsBranchScopeOnTheNormedInput) {
  std::string input_seen;
  const LayerDescription layer{{rms("ln_1"), "attn", doubling(&input_seen), "attn_residual"},
                               {rms("ln_2"), "mlp", swiglu(), "mlp_residual"}};
  const std::vector<std::string> nodes = built_nodes(layer);
  // The custom body read ln_1's output, and its Mul sits in the branch's scope
  // between ln_1 and the residual Add.
  EXPECT_EQ(input_seen.rfind("/layers.0/ln_1/", 0), 0u) << input_seen;
  const auto at = [&](const std::string& name) { return std::find(nodes.begin(), nodes.end(), name) - nodes.begin(); };
  ASSERT_LT(at("/layers.0/attn/Mul"), static_cast<long>(nodes.size()));
  EXPECT_LT(at("/layers.0/attn/Mul"), at("/layers.0/attn_residual/Add"));
  EXPECT_LT(at("/layers.0/attn_residual/Add"), at("/layers.0/mlp_residual/Add"));
  EXPECT_EQ(nodes.back(), "/layers.0/mlp_residual/Add");
}

TEST(DecoderLayer, ACustomBodyWithNothingToBuildIsAnInternalError) {
  CustomBody empty;
  empty.tensors.add("custom.weight", {kHidden});
  const LayerDescription layer{{rms("ln_1"), "attn", empty, "attn_residual"},
                               {rms("ln_2"), "mlp", swiglu(), "mlp_residual"}};
  EXPECT_THROW(built_nodes(layer), llm2hef::InternalError);
}

// The first node under `prefix`, as an index into `nodes` (nodes.size() when none).
long first(const std::vector<std::string>& nodes, const std::string& prefix) {
  const auto it =
      std::find_if(nodes.begin(), nodes.end(), [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
  return it - nodes.begin();
}

TEST(DecoderLayer, EachNormPlacementPutsItsNormsWhereItSays) {
  const auto mixer_nodes = [](NormPlacement placement, std::optional<NormSpec> post) {
    const LayerDescription layer{{rms("ln_1"), "attn", doubling(nullptr), "attn_residual", placement, post},
                                 {rms("ln_2"), "mlp", swiglu(), "mlp_residual"}};
    return built_nodes(layer);
  };
  const std::string norm = "/layers.0/ln_1/", body = "/layers.0/attn/Mul", add = "/layers.0/attn_residual/Add";
  const std::string post = "/layers.0/post_ln/";
  // pre: h + body(norm(h))
  std::vector<std::string> n = mixer_nodes(NormPlacement::pre, std::nullopt);
  EXPECT_LT(first(n, norm), first(n, body));
  EXPECT_LT(first(n, body), first(n, add));
  // sandwich: h + post(body(norm(h)))
  n = mixer_nodes(NormPlacement::sandwich, rms("post_ln"));
  EXPECT_LT(first(n, norm), first(n, body));
  EXPECT_LT(first(n, body), first(n, post));
  EXPECT_LT(first(n, post), first(n, add));
  // post: h + norm(body(h))
  n = mixer_nodes(NormPlacement::post, std::nullopt);
  EXPECT_LT(first(n, body), first(n, norm));
  EXPECT_LT(first(n, norm), first(n, add));
  // residual: norm(h + body(h))
  n = mixer_nodes(NormPlacement::residual, std::nullopt);
  EXPECT_LT(first(n, body), first(n, add));
  EXPECT_LT(first(n, add), first(n, norm));
  EXPECT_LT(first(n, norm), first(n, "/layers.0/ln_2/"));
  // Every norm in the table once, in the order the branch reads it.
  const LayerDescription post_only{{rms("ln_1"), "attn", doubling(nullptr), "attn_residual", NormPlacement::post},
                                   {rms("ln_2"), "mlp", swiglu(), "mlp_residual"}};
  EXPECT_EQ(row_names(post_only), (std::vector<std::string>{"custom.weight", "ln_1.weight", "ln_2.weight",
                                                            "gate.weight", "up.weight", "down.weight"}));
}

TEST(DecoderLayer, AParallelLayersSharedNormFeedsBothBodies) {
  std::string mixer_input, ffn_input;
  CustomBody ffn = doubling(&ffn_input);
  ffn.tensors = TensorTable();
  const LayerDescription layer{{rms("ln"), "attn", doubling(&mixer_input), "attn_residual"},
                               {NormSpec{}, "mlp", ffn, "mlp_residual", NormPlacement::shared},
                               true,
                               ParallelSum::branches_first};
  const std::vector<std::string> nodes = built_nodes(layer);
  EXPECT_EQ(ffn_input, mixer_input);
  EXPECT_EQ(mixer_input.rfind("/layers.0/ln/", 0), 0u) << mixer_input;
  EXPECT_EQ(nodes.back(), "/layers.0/attn_residual/Add");  // (mixer + ffn) + h
  EXPECT_EQ(row_names(layer), (std::vector<std::string>{"ln.weight", "custom.weight"}));
}

TEST(DecoderLayer, APlacementThatDoesNotFitItsNormsOrItsLayerIsAnInternalError) {
  const auto refused = [](const LayerDescription& layer) {
    try {
      row_names(layer);
    } catch (const llm2hef::InternalError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const BranchDescription mlp{rms("ln_2"), "mlp", swiglu(), "mlp_residual"};
  auto mixer = [](NormPlacement placement, std::optional<NormSpec> post = std::nullopt) {
    return BranchDescription{rms("ln_1"), "attn", doubling(nullptr), "attn_residual", placement, std::move(post)};
  };
  EXPECT_NE(refused({mixer(NormPlacement::sandwich), mlp}).find("'attn' (norm placement sandwich) needs a post_norm"),
            std::string::npos);
  EXPECT_NE(refused({mixer(NormPlacement::pre, rms("post")), mlp}).find("only a sandwich placement reads"),
            std::string::npos);
  EXPECT_NE(refused({mixer(NormPlacement::shared), mlp}).find("names a norm it would not apply"), std::string::npos);
  const BranchDescription shared{NormSpec{}, "mlp", swiglu(), "mlp_residual", NormPlacement::shared};
  EXPECT_NE(refused({mixer(NormPlacement::pre), shared}).find("outside the feed-forward of a parallel layer"),
            std::string::npos);
  EXPECT_NE(refused({mixer(NormPlacement::post), shared, true}).find("in a parallel layer (pre only)"),
            std::string::npos);
  EXPECT_NE(refused({mixer(NormPlacement::pre),
                     {rms("ln_2"), "mlp", swiglu(), "mlp_residual", NormPlacement::residual},
                     true})
                .find("in a parallel layer (pre or shared only)"),
            std::string::npos);
  EXPECT_EQ(refused({mixer(NormPlacement::pre), shared, true}), "");
  // The build refuses them too, before any node.
  EXPECT_THROW(built_nodes({mixer(NormPlacement::sandwich), mlp}), llm2hef::InternalError);
}

// A per-graph input of the test's own: a scalar, counting how often it is made.
struct CountedScalar {
  using Result = Value;
  int tag = 0;
  int* made = nullptr;
  bool operator==(const CountedScalar&) const = default;
  Result make(GraphBuilder& g, const DecoderContext&) const {
    ++*made;
    return g.scalar("counted" + std::to_string(tag), 1.0f);
  }
};

TEST(DecoderContext, APerGraphInputIsMadeOnceOnItsFirstRequest) {
  TempDir tmp;
  const MemoryCheckpoint ckpt({});
  const DecoderInputs io{};
  const Plan plan;
  const DecoderModel model;
  GraphBuilder g("inputs", tmp.path() / "model.onnx.data");
  const DecoderContext ctx(ckpt, io, plan, model, {});
  int made = 0;
  const Value first = ctx.input(g, CountedScalar{1, &made});
  const Value again = ctx.input(g, CountedScalar{1, &made});
  EXPECT_EQ(made, 1);
  EXPECT_EQ(again.name, first.name);
  const Value other = ctx.input(g, CountedScalar{2, &made});
  EXPECT_EQ(made, 2);
  EXPECT_NE(other.name, first.name);
}

// Two short-conv layers on a cache of 4 (2 heads): what DecoderAdapter does,
// inputs first, then the layers; the node names in order.
std::vector<std::string> two_conv_layers(bool request_first) {
  const ShortConvSpec conv{"conv.in_proj.weight",
                           "conv.conv.weight",
                           "conv.out_proj.weight",
                           std::nullopt,
                           std::nullopt,
                           std::nullopt,
                           kHidden,
                           3};
  const LayerDescription layer{{rms("operator_norm"), "conv", short_conv_body(conv), "operator_residual"},
                               {rms("ffn_norm"), "mlp", swiglu(), "ffn_residual"}};
  TempDir tmp;
  const MemoryCheckpoint ckpt(shapes_of(layer));
  {
    GraphBuilder g("conv", tmp.path() / "model.onnx.data");
    DecoderInputs io{};
    io.runtime.mask = g.input("attention_mask", {1, 1, 4, 8});
    Value x = g.input("x", {1, 4, kHidden});
    Plan plan;
    plan.cache_size = 4;
    const DecoderModel model;
    DecoderContext ctx(ckpt, io, plan, model, {});
    for (int64_t i = 0; request_first && i < 2; ++i) {
      ctx.layer = i;
      request_layer_inputs(g, ctx, layer);
    }
    for (int64_t i = 0; i < 2; ++i) {
      auto s = g.scope("layers." + std::to_string(i));
      ctx.layer = i;
      x = build_layer(g, ctx, x, layer);
    }
    g.output(x, "y");
    g.save(tmp.path() / "model.onnx", {});
  }
  std::ifstream in(tmp.path() / "model.onnx", std::ios::binary);
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromIstream(&in));
  std::vector<std::string> nodes;
  for (const auto& n : m.graph().node()) nodes.push_back(n.name());
  return nodes;
}

TEST(DecoderContext, ShortConvLayersShareOneSetOfShiftsMadeBeforeTheFirstLayer) {
  const auto count = [](const std::vector<std::string>& nodes, const std::string& name) {
    return std::count(nodes.begin(), nodes.end(), name);
  };
  std::vector<std::string> nodes = two_conv_layers(true);
  EXPECT_EQ(count(nodes, "/conv_shifts/allowed/Mul"), 1);
  EXPECT_LT(first(nodes, "/conv_shifts/"), first(nodes, "/layers.0/"));
  // Asked for only while building, the shifts are made once, inside the first layer.
  nodes = two_conv_layers(false);
  EXPECT_EQ(count(nodes, "/layers.0/conv/conv_shifts/allowed/Mul"), 1);
  EXPECT_EQ(first(nodes, "/layers.1/conv/conv_shifts/"), static_cast<long>(nodes.size()));
}

}  // namespace
