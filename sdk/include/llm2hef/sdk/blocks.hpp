// Building blocks of Hailo-shaped decoder graphs, shared by all adapters.
//
// Each block emits the op pattern hailo-contract.md section 2 describes as
// parsable by the DFC (MatMul with constant weights, Pow/ReduceMean/Sqrt/
// Reciprocal norms, Softmax on the last axis, Reshape immediately followed by
// Transpose) and never Expand, Gather on activations, or dynamic shapes.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// ---- the six runtime inputs ----
struct RuntimeInputs {
  Value embeds, mask, q_cos, q_sin, k_cos, k_sin;
};
// Declares them in the contract's order with static shapes from the plan:
// embeds [1, N, H], mask [1, 1, N, heads*N], pe tables [1, N, T].
RuntimeInputs declare_runtime_inputs(GraphBuilder& g, const Plan& plan);

// The q tables tiled pe_q_tiles times and the k tables pe_k_tiles times,
// block-wise (head h gets columns h*T..(h+1)*T-1), each by a constant 0/1
// MatMul. These are the tiling convs the HAR fixup deletes once the input
// layers are widened to what the runtime really writes.
struct PeTables {
  Value q_cos, q_sin, k_cos, k_sin;
};
PeTables tile_pe_tables(GraphBuilder& g, const RuntimeInputs& in, const Plan& plan);

// The first head's block of the tiled mask, [1, 1, N, N], broadcast over heads
// when added to the scores. attention() takes one per layer (the HAR fixup
// rewires each one).
Value head_mask(GraphBuilder& g, const Value& mask, int64_t seq);

// ---- linear algebra on checkpoint weights ----
enum class WeightLayout {
  in_out,  // GPT-2 Conv1D: y = x W
  out_in,  // nn.Linear: y = x W^T
};
struct LinearSpec {
  std::string weight;
  std::optional<std::string> bias;
  WeightLayout layout = WeightLayout::out_in;
  int64_t out_begin = 0, out_end = -1;  // output-feature range (fused projections)
  float scale = 1.0f;                   // folded into weight and bias (families/scalar_multipliers.hpp)
};
// MatMul with a constant [in, out] weight, then Add of the bias if present.
Value linear(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const LinearSpec& spec);

// ---- norms ----
// Norms use the op spellings torch's TorchScript exporter (opset 17) writes
// (hailo-contract.md section 2, "Op patterns").
// LayerNorm over the last axis (biased variance), weight and bias: one
// LayerNormalization node, as torch writes nn.LayerNorm (docs/gpt2.md).
Value layer_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight,
                 const std::string& bias, float eps);
// LayerNorm without elementwise affine: the same node with a constant scale
// of ones and bias of zeros (what torch writes for elementwise_affine=False).
Value layer_norm_without_affine(GraphBuilder& g, const Value& x, float eps);
// 1 / sqrt(x) as torch writes rsqrt: Sqrt, then Div with a constant 1 (never
// Reciprocal).
Value inverse_sqrt(GraphBuilder& g, const Value& x);
// RMSNorm: x * rsqrt(mean(x^2) + eps) * w, as Pow, ReduceMean, Add, Sqrt,
// Div(1, .), Mul, Mul. A non-zero `weight_offset` scales by (offset + w)
// instead (Gemma's (1 + w), added in float32 as HF does), written as one
// constant.
Value rms_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight, float eps,
               float weight_offset = 0.0f);

// ---- activations ----
// ReLU as one Relu node (OPT).
Value relu(GraphBuilder& g, const Value& x);
enum class GeluForm { sigmoid, tanh, erf };
// sigmoid: x * sigmoid(1.702 x) (SEED's parsable approximation);
// tanh: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), HF's gelu_new exactly;
// erf: x * 0.5 (1 + erf(x / sqrt(2))), the exact GELU (HF's "gelu"), spelled
// as torch's exporter writes F.gelu: Div, Erf, Add, Mul, Mul.
Value gelu(GraphBuilder& g, const Value& x, GeluForm form);
Value silu(GraphBuilder& g, const Value& x);

// ---- feed-forward ----
// SwiGLU: down(silu(gate(x)) * up(x)), no biases (Llama family, LFM2). Each
// projection gets its own scope, named after the checkpoint's module
// ("gate_proj" / "w1", ...), so node names follow the HF module tree.
struct SwigluSpec {
  std::string gate_weight, up_weight, down_weight;  // checkpoint tensors, [out, in]
  std::string gate_scope, up_scope, down_scope;
  float down_scale = 1.0f;  // folded into down_proj (Granite's residual_multiplier)
  // Output-feature ranges of gate_weight / up_weight: a fused gate_up_proj
  // (Phi-3) names one tensor twice with its two halves. Defaults: all of it.
  int64_t gate_begin = 0, gate_end = -1, up_begin = 0, up_end = -1;
};
Value swiglu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const SwigluSpec& spec);
// The tensor names transformers' decoder models share under `model.`:
// the embedding, layer i's prefix ("model.layers.3.") and the final norm
// (Llama family, post-norm decoders, Phi, Phi-3, StableLM, LFM2). Header-only:
// no symbol added to the SDK library.
inline constexpr const char* kHfEmbedTokens = "model.embed_tokens.weight";
inline constexpr const char* kHfFinalNorm = "model.norm.weight";
inline std::string hf_layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }
// The gated MLP module transformers' Llama-style models name `mlp` under a
// layer ("model.layers.3."): mlp.gate_proj, mlp.up_proj, mlp.down_proj, each
// in the scope of its module name (Llama family, Gemma, OLMo 2, StableLM).
// Header-only: no symbol added to the SDK library.
inline SwigluSpec hf_gated_mlp(const std::string& layer_prefix) {
  return {layer_prefix + "mlp.gate_proj.weight",
          layer_prefix + "mlp.up_proj.weight",
          layer_prefix + "mlp.down_proj.weight",
          "gate_proj",
          "up_proj",
          "down_proj"};
}
// GeGLU: down(gelu(gate(x)) * up(x)) with the tanh GELU, which is exactly
// HF's gelu_pytorch_tanh (Gemma 2/3). Same weights and scopes as SwigluSpec.
Value geglu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const SwigluSpec& spec);

// down(gelu(up(x))), with whatever biases and layouts the specs give (GPT-2's
// c_fc and c_proj: Conv1D [in, out] with biases). Scopes as for SwigluSpec;
// the GELU sits between them in scope "gelu".
struct GeluMlpSpec {
  LinearSpec up, down;
  std::string up_scope, down_scope;
  GeluForm form = GeluForm::tanh;
};
Value gelu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const GeluMlpSpec& spec);

// down(relu(up(x))) with the specs' biases (OPT's fc1 and fc2); the Relu sits
// between them in scope "relu".
struct ReluMlpSpec {
  LinearSpec up, down;
  std::string up_scope, down_scope;
};
Value relu_mlp(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const ReluMlpSpec& spec);

// ---- attention ----
struct AttentionShape {
  int64_t seq = 0, heads = 0, kv_heads = 0, head_dim = 0;
  float score_divisor = 0;  // divides q k^T (a Div, as LNM's q k^T / sqrt(HD)); usually sqrt(head_dim)
  float logit_softcap = 0;  // > 0: scores = tanh(scores / c) * c before the mask (Gemma 2); 0 = none
  std::optional<Value> window_band =
      std::nullopt;  // added after the mask: a sliding-window layer (sliding_window_band.hpp)
};
// q [1, S, heads*D], k and v [1, S, kv_heads*D] (already position-encoded);
// `mask` the runtime's attention_mask input [1, 1, S, heads*S], whose first
// head block is sliced right before it is added (as torch writes
// `mask[:, :, :, :s]`). GQA by a constant 0/1 repeat-interleave MatMul (never
// Expand, never tile order); heads split by Reshape immediately followed by
// Transpose; scores / divisor + mask; Softmax; P V; heads merged. Returns
// [1, S, heads*D]. Ops and their order are those of torch's TorchScript
// export of LNM's formulation (tests/numerics/test_op_sequences.py).
Value attention(GraphBuilder& g, const Value& q, const Value& k, const Value& v, const Value& mask,
                const AttentionShape& shape);

// ---- output ----
// The last position only, [1, 1, H]: the runtime samples from it directly.
Value last_position(GraphBuilder& g, const Value& x);

// Equal-width lm_head shards: the fewest shards of one width that divides
// `vocab` with width <= max_width; a single shard when vocab fits. `reason`
// explains the choice for manifest and inspect. Throws Unsupported for
// `requested` shard counts that do not divide the vocabulary, and when no
// split into at most 64 equal outputs exists (e.g. a large prime vocabulary).
std::vector<int64_t> choose_lm_head_shards(int64_t vocab, int64_t requested, std::string& reason,
                                           int64_t max_width = 40000);

}  // namespace llm2hef::sdk
