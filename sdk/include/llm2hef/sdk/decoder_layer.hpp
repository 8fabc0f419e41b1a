// One decoder layer, described (issue 38): two residual branches, the token
// mixer and then the feed-forward, each a norm placement around a body.
//
// A body is one of a closed set of kinds (BranchBody). Each kind says what
// it reads, `declare_body` (its rows in the tensor table, checked before
// anything is built), and what it builds, `build_body` (its nodes on the
// branch's input). Both are dispatched with std::visit over the overloads
// below, so a kind added without both does not compile.
//
// A branch is `h = h + body(norm(h))` by default. `post_norm` normalizes the
// body's output before the residual Add (Gemma 2/3's sandwich norms; OLMo 2
// with `pre_norm` false), `residual_norm` after the Add (OPT-350m's post-LN),
// and a parallel layer has both branches read the layer's input (GPT-NeoX,
// Phi, StableLM). The placements do not combine: a branch with a
// `residual_norm` ignores `pre_norm` and `post_norm`, and a parallel layer
// applies only each branch's `norm`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/short_conv.hpp"
#include "llm2hef/sdk/tensor_table.hpp"

namespace llm2hef::sdk {

// ---- what build time hands a layer ----

// The values that exist only while the graph is built. `attention` is the
// attention shape of every layer, derived once from the description's
// dimensions and the plan's cache (DecoderAdapter::build_graph).
struct DecoderContext {
  const Checkpoint& ckpt;
  const DecoderInputs& io;
  AttentionShape attention;
  CausalShifts shifts;               // built once when a layer's mixer is a short conv (short_conv.hpp)
  std::vector<PeTables> pe_by_base;  // the pe tables of each RoPE base (rope_bases.hpp); one base: io.pe
  std::optional<Value> window_band;  // --sliding-window band beyond the window (sliding_window_band.hpp)
  bool sliding = false;              // the layer being built attends within the sliding window
};

// ---- the body kinds ----

// Attention through attention_block(); `spec.shape` is left empty by the
// description and set from the context when the graph is built.
struct AttentionMixer {
  AttentionBlockSpec spec;
  // Set: q, k and v come from one fused tensor, `fused_qkv(g, ckpt, x, part)`
  // giving part 0 q, 1 k, 2 v, each built in scope q_proj / k_proj / v_proj
  // (Phi-3's qkv_proj, GPT-NeoX's query_key_value); the description declares
  // the fused tensor's rows.
  std::function<Value(GraphBuilder&, const Checkpoint&, const Value&, int)> fused_qkv = {};
  // A QK-Norm that is a LayerNorm over each head (Phi, StableLM) instead of
  // RMSNorm: one [head_dim] tensor shared by the heads or one per head
  // (head_norm.hpp); biases may be empty. spec.q_norm / k_norm name the scopes.
  struct HeadLayerNorms {
    std::vector<std::string> q_weights, q_biases, k_weights, k_biases;
  };
  std::optional<HeadLayerNorms> head_layer_norms = std::nullopt;
  int64_t rope_base = 0;  // which of the model's RoPE bases this layer reads (Gemma 3)
};
// GeGLU: down(gelu_tanh(gate) * up), the weights and scopes of a SwigluSpec (Gemma).
struct GegluMlp {
  SwigluSpec spec;
};
// A body with no ready-made kind (GPT-2's split c_attn): `tensors` are the
// rows `build` reads, declared with the layer; `build` makes the body from
// the context and the branch's input.
struct CustomBody {
  TensorTable tensors;
  std::function<Value(GraphBuilder&, const DecoderContext&, const Value&)> build;
};
using BranchBody =
    std::variant<AttentionMixer, ShortConvSpec, SwigluSpec, GegluMlp, GeluMlpSpec, ReluMlpSpec, CustomBody>;

// What each kind reads, declared in `table` with the layer's sizes (`dims.hidden`
// is the residual stream's width).
void declare_body(TensorTable& table, const ModelDims& dims, const AttentionMixer& body);
void declare_body(TensorTable& table, const ModelDims& dims, const ShortConvSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const SwigluSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const GegluMlp& body);
void declare_body(TensorTable& table, const ModelDims& dims, const GeluMlpSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const ReluMlpSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const CustomBody& body);

// What each kind builds on `x` [1, N, hidden], returning [1, N, hidden], in
// the scope the branch opened.
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const AttentionMixer& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const ShortConvSpec& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const SwigluSpec& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const GegluMlp& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const GeluMlpSpec& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const ReluMlpSpec& body);
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const CustomBody& body);

// ---- a layer ----

struct BranchDescription {
  NormSpec norm;
  std::string scope;  // the body's scope, named after the HF module ("self_attn", "mlp")
  BranchBody body;
  std::string residual;  // scope of the residual Add ("attn_residual")
  // Post-LN placement (OPT-350m): when set, the branch is
  // residual_norm(h + body(h)); `norm`, `pre_norm` and `post_norm` are not read.
  std::optional<NormSpec> residual_norm = std::nullopt;
  // Gemma: h + post_norm(body(norm(h))); with pre_norm false (OLMo 2),
  // h + post_norm(body(h)). Not read in a parallel layer.
  std::optional<NormSpec> post_norm = std::nullopt;
  bool pre_norm = true;  // false: `norm` is not applied (not read in a parallel layer)
};

// How a parallel layer sums its two branches. Float addition is commutative
// but not associative, so the grouping follows the reference exactly.
enum class ParallelSum {
  branches_first,  // (mixer + ffn) + h: GPT-NeoX, Phi
  residual_first,  // (h + mixer) + ffn: StableLM
};

struct LayerDescription {
  BranchDescription mixer;  // attention, short conv, ...
  BranchDescription ffn;    // MLP / feed-forward
  // Parallel residual (GPT-NeoX, Phi, StableLM):
  // h = h + mixer(norm_1(h)) + ffn(norm_2(h)), both branches reading the
  // layer's input. An ffn norm with an empty scope reuses the mixer's normed
  // input (one shared norm, as Phi-2's input_layernorm). The Adds are named
  // after mixer.residual and ffn.residual. Only each branch's `norm` is
  // applied: `pre_norm`, `post_norm` and `residual_norm` are not read.
  bool parallel = false;
  ParallelSum sum = ParallelSum::branches_first;
};

// The attention spec of a layer whose mixer is attention, for a member to
// edit (InternalError otherwise).
AttentionBlockSpec& attention_spec(LayerDescription& layer);

// The rows the layer reads (its norms and its bodies'), appended to `table`.
void declare_layer(TensorTable& table, const ModelDims& dims, const LayerDescription& layer);

// The layer on the residual stream `hidden`, in the scope the caller opened
// ("layers.<i>").
Value build_layer(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const LayerDescription& layer);

}  // namespace llm2hef::sdk
