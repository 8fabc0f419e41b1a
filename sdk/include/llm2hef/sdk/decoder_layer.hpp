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
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <variant>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/tensor_table.hpp"

namespace llm2hef::sdk {

// ---- what build time hands a layer ----

struct DecoderModel;  // decoder_model.hpp

// The values that exist only while the graph is built. `attention` is the
// attention shape of every layer, derived once from the description's
// dimensions and the plan's cache (DecoderAdapter::build_graph).
//
// A body that reads a value made once per graph (the tables of each RoPE
// base, the sliding-window band, the short conv's shift matrices) asks for
// it with input(g, key): the first request makes it, every later one gets the
// same value. A key is a small type with `operator==`, a `Result` type and
// `Result make(GraphBuilder&, const DecoderContext&) const`; equal keys of
// one type are one input. DecoderAdapter asks for every layer's inputs
// (request_layer_inputs) before it builds the first layer, so they sit
// before the layers in the graph, in the model's scope.
class DecoderContext {
 public:
  DecoderContext(const Checkpoint& ckpt, const DecoderInputs& io, const Plan& plan, const DecoderModel& model,
                 AttentionShape attention)
      : ckpt(ckpt), io(io), plan(plan), model(model), attention(attention) {}

  const Checkpoint& ckpt;
  const DecoderInputs& io;
  const Plan& plan;
  const DecoderModel& model;
  AttentionShape attention;
  int64_t layer = -1;  // the layer being built; -1 outside the layers (embedding, tail)

  // The layer being built attends within the sliding window (model.sliding_window).
  bool sliding() const;

  template <class Key>
  const typename Key::Result& input(GraphBuilder& g, const Key& key) const {
    using Result = typename Key::Result;
    const std::type_index type(typeid(Key));
    for (const Made& m : made_)
      if (m.type == type && *static_cast<const Key*>(m.key.get()) == key)
        return *static_cast<const Result*>(m.value.get());
    auto value = std::make_shared<const Result>(key.make(g, *this));
    made_.push_back({type, std::make_shared<const Key>(key), value});
    return *value;
  }

 private:
  struct Made {
    std::type_index type;
    std::shared_ptr<const void> key, value;
  };
  mutable std::vector<Made> made_;
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
// A body with no ready-made kind (GPT-2's split c_attn, LFM2's short conv in
// the families library): `tensors` are the rows `build` reads, declared with
// the layer; `inputs`, when set, asks the context for the per-graph inputs
// `build` reads (DecoderContext::input); `build` makes the body from the
// context and the branch's input.
struct CustomBody {
  TensorTable tensors;
  std::function<Value(GraphBuilder&, const DecoderContext&, const Value&)> build;
  std::function<void(GraphBuilder&, const DecoderContext&)> inputs = {};
};
using BranchBody = std::variant<AttentionMixer, SwigluSpec, GegluMlp, GeluMlpSpec, ReluMlpSpec, CustomBody>;

// What each kind reads, declared in `table` with the layer's sizes (`dims.hidden`
// is the residual stream's width).
void declare_body(TensorTable& table, const ModelDims& dims, const AttentionMixer& body);
void declare_body(TensorTable& table, const ModelDims& dims, const SwigluSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const GegluMlp& body);
void declare_body(TensorTable& table, const ModelDims& dims, const GeluMlpSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const ReluMlpSpec& body);
void declare_body(TensorTable& table, const ModelDims& dims, const CustomBody& body);

// The per-graph inputs a kind reads, asked for before the first layer is
// built (DecoderContext::input). A kind that reads none needs no overload:
// this default asks for nothing, and an input asked for only while a layer is
// built is made there, correct but inside that layer's scope.
template <class Kind>
void request_inputs(GraphBuilder& /*g*/, const DecoderContext& /*ctx*/, const Kind& /*body*/) {}
void request_inputs(GraphBuilder& g, const DecoderContext& ctx, const AttentionMixer& body);
void request_inputs(GraphBuilder& g, const DecoderContext& ctx, const CustomBody& body);

// What each kind builds on `x` [1, N, hidden], returning [1, N, hidden], in
// the scope the branch opened.
Value build_body(GraphBuilder& g, const DecoderContext& ctx, const Value& x, const AttentionMixer& body);
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

// The per-graph inputs of both branches' bodies (request_inputs), for the
// layer ctx.layer.
void request_layer_inputs(GraphBuilder& g, const DecoderContext& ctx, const LayerDescription& layer);

// The layer ctx.layer on the residual stream `hidden`, in the scope the
// caller opened ("layers.<i>").
Value build_layer(GraphBuilder& g, const DecoderContext& ctx, const Value& hidden, const LayerDescription& layer);

}  // namespace llm2hef::sdk
