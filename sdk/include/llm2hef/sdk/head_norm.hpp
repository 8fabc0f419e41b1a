// Norms per attention head on q or k [1, S, heads*D] (QK-Norm), without
// reshaping (nothing may sit between a head Reshape and its Transpose):
// constant segment matrices S [heads*D, heads] give each head's statistics.
// RMSNorm (Qwen3, Gemma 3) and LayerNorm (Phi's qk_layernorm, one norm shared
// by the heads, with bias; StableLM's, one per head, no bias).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// Per-head RMSNorm over head_dim without reshaping (QK-Norm): with a
// constant segment matrix S [heads*D, heads], var = ((x^2) S)(S^T / D), then
// x * rsqrt(var + eps) * w tiled per head. A non-zero `weight_offset` scales
// by (offset + w) instead (Gemma 3's (1 + w), added in float32 as HF does).
// With one head it is rms_norm (blocks.hpp) over x: the same value, in the
// spelling every other RMSNorm has.
Value head_rms_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight, int64_t heads,
                    int64_t head_dim, float eps, float weight_offset = 0.0f);

// How head_rms_norm writes the QK-Norm of q (`heads`) and k (`kv_heads`), for
// a plan's rewrite line. Header-only: no symbol added to the SDK library.
inline std::string head_rms_norm_form(int64_t heads, int64_t kv_heads) {
  if (heads > 1 && kv_heads > 1) return "through constant segment matrices";
  if (heads == 1 && kv_heads == 1) return "as plain RMSNorms (one head each)";
  return heads == 1 ? "of q as a plain RMSNorm (one head), of k through constant segment matrices"
                    : "of q through constant segment matrices, of k as a plain RMSNorm (one KV head)";
}

// heads*D values: `tensors` holds one [D] tensor shared by every head, or one per head.
std::vector<float> tiled_head_vector(const Checkpoint& ckpt, const std::vector<std::string>& tensors, int64_t heads,
                                     int64_t head_dim);

// (x - mean) * rsqrt(var + eps) * weight [+ bias], per head; `bias` may be empty.
Value head_layer_norm(GraphBuilder& g, const Value& x, const std::vector<float>& weight, const std::vector<float>& bias,
                      int64_t heads, int64_t head_dim, float eps);

// The same as a QK-Norm hook for AttentionBlockSpec (q_norm_fn / k_norm_fn):
// `weights` and `biases` (may be empty) name one [D] tensor shared by every
// head or one per head; they are read when the graph is built.
std::function<Value(GraphBuilder&, const Value&)> head_layer_norm_fn(const Checkpoint& ckpt,
                                                                     std::vector<std::string> weights,
                                                                     std::vector<std::string> biases, int64_t heads,
                                                                     int64_t head_dim, float eps);

}  // namespace llm2hef::sdk
