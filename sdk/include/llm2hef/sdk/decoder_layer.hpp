// One decoder layer, described (issue 38): two residual branches, the token
// mixer and then the feed-forward, each a norm placement around a body.
//
// A body is one of a closed set of kinds (BranchBody). Each kind says what
// it reads, `declare_body` (its rows in the tensor table, checked before
// anything is built), and what it builds, `build_body` (its nodes on the
// branch's input). Both are dispatched with std::visit over the overloads
// below, so a kind added without both does not compile.
//
// Where a branch's norms sit around its body is one NormPlacement; a
// parallel layer has both branches read the layer's input (GPT-NeoX, Phi,
// StableLM). A placement that does not fit its norms or its layer is an
// InternalError when the description is checked, before anything is built.
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

// Where a branch's norms sit, h being the residual stream.
enum class NormPlacement {
  pre,       // h + body(norm(h)): Llama and most families
  sandwich,  // h + post_norm(body(norm(h))): Gemma 2/3
  post,      // h + norm(body(h)): OLMo 2
  residual,  // norm(h + body(h)): OPT's post-LN (do_layer_norm_before false)
  // The feed-forward of a parallel layer only: the body reads the mixer's
  // normed input, one norm for both branches (Phi-2, StableLM); no norm of its own.
  shared,
};

struct BranchDescription {
  NormSpec norm;      // the branch's norm, where `placement` puts it (empty for `shared`)
  std::string scope;  // the body's scope, named after the HF module ("self_attn", "mlp")
  BranchBody body;
  std::string residual;  // scope of the residual Add ("attn_residual")
  NormPlacement placement = NormPlacement::pre;
  std::optional<NormSpec> post_norm = std::nullopt;  // `sandwich` only: the norm after the body
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
  // layer's input, summed as `sum` says. The mixer's placement is `pre`, the
  // feed-forward's `pre` (a norm of its own: GPT-NeoX) or `shared` (the
  // mixer's normed input: Phi-2, StableLM). The Adds are named after
  // mixer.residual and ffn.residual.
  bool parallel = false;
  ParallelSum sum = ParallelSum::branches_first;
};

// The attention spec of a layer whose mixer is attention, for a member to
// edit (InternalError otherwise).
AttentionBlockSpec& attention_spec(LayerDescription& layer);

// The rows the layer reads (its norms and its bodies'), appended to `table`;
// InternalError when a placement does not fit its norms or its layer.
void declare_layer(TensorTable& table, const ModelDims& dims, const LayerDescription& layer);

// The layer on the residual stream `hidden`, in the scope the caller opened
// ("layers.<i>").
Value build_layer(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const LayerDescription& layer);

}  // namespace llm2hef::sdk
