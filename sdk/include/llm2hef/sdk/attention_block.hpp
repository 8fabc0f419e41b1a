// The whole attention sub-layer of a Llama-style decoder: q/k/v projections,
// optional per-head q/k RMSNorm (QK-Norm), RoPE, GQA attention and the output
// projection. Shared by the Llama family and LFM2's attention layers, which
// differ only in module names, biases and where RoPE applies.
//
// Each module gets a scope named after the HF module ("q_proj", "q_norm" or
// "q_layernorm", "o_proj" or "out_proj"), so node names follow the HF tree.
// The caller opens the enclosing scope ("attn", "self_attn").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::sdk {

struct AttentionBlockSpec {
  std::string prefix;       // checkpoint prefix of the module, "model.layers.3.self_attn."
  std::string q_norm = {};  // per-head norm modules ("q_norm", "q_layernorm"); empty = no QK-Norm
  std::string k_norm = {};
  std::string out_proj;  // "o_proj", "out_proj"
  bool qkv_bias = false;
  bool out_bias = false;
  bool rope = true;                 // false on NoPE layers
  AttentionShape shape = {};        // seq, heads, kv_heads, head_dim, score_divisor (DecoderAdapter fills it)
  float norm_eps = 1e-6f;           // of the QK-Norm
  float out_scale = 1.0f;           // folded into the output projection (Granite's residual_multiplier)
  bool qk_norm_full_width = false;  // OLMo 2: one RMSNorm over all of q (heads*D) and all of k (kv_heads*D)
  float norm_weight_offset = 0.0f;  // Gemma 3: the QK-Norm scales by (1 + w)
  // Partial rotary (sdk/partial_rotary.hpp): RoPE on the first rotary_dim
  // dimensions of each head only; 0 = all of them.
  int64_t rotary_dim = 0;
  // Applied to q and to k at their own width (heads: their head count), in
  // scopes q and k just before RoPE: LongRoPE's attention factor
  // (families/longrope.hpp). Empty = nothing.
  std::function<Value(GraphBuilder&, const Value& x, int64_t heads, int64_t head_dim)> before_rope = {};
  // A QK-Norm other than per-head RMSNorm (per-head LayerNorm: Phi,
  // StableLM), built in scopes q_norm / k_norm on [1, S, heads*D]; when set,
  // q_norm / k_norm name only the scopes.
  std::function<Value(GraphBuilder&, const Value&)> q_norm_fn = {}, k_norm_fn = {};
};

// `x` is the normed hidden state [1, N, hidden]; `mask` the runtime's
// attention_mask input (attention() slices its first head block).
Value attention_block(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const Value& mask, const PeTables& pe,
                      const AttentionBlockSpec& spec);

// The same from projections the caller made (fused qkv split at export):
// QK-Norm, RoPE, attention and the output projection.
Value attention_from_qkv(GraphBuilder& g, const Checkpoint& ckpt, Value q, Value k, const Value& v, const Value& mask,
                         const PeTables& pe, const AttentionBlockSpec& spec);

}  // namespace llm2hef::sdk
