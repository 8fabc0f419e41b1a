// The Llama-family decoder (docs/architectures.md section 1) described once:
// Llama, Mistral, Qwen2, Qwen3, SmolLM3 and Granite differ only in what
// their adapter edits on the description describe_llama_family() returns
// (Qwen2 sets q/k/v biases on every layer's attention, Qwen3 its QK-Norm,
// SmolLM3 its NoPE layers, Granite its multipliers).
#pragma once

#include <string>
#include <vector>

#include "llm2hef/families/families.hpp"
#include "llm2hef/families/scalar_multipliers.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder_model.hpp"

namespace llm2hef::families {

// The keys every member shares: sizes, head_dim (config value, else
// hidden/heads), intermediate_size, rms_norm_eps, hidden_act (silu),
// tie_word_embeddings, attention_bias, RoPE with its scaling, and the sliding
// window (sdk/sliding_window.hpp) whichever member reads it, so forcing
// another adapter cannot skip the window. Every layer: input_layernorm,
// self_attn (q/k/v/o_proj, RoPE), post_attention_layernorm, SwiGLU mlp. The
// tensors another member reads (q_proj.bias, o_proj.bias, q_norm) are
// refused when nothing in the description reads them, so a forced
// --adapter llama on a Qwen2 or Qwen3 checkpoint cannot drop them silently.
DecoderModel describe_llama_family(const Checkpoint& ckpt);

// The forward keys (sdk/forward_keys.hpp) describe_llama_family() applies
// (attention_bias and the sliding window's three), then `member_keys`, the
// ones a member's own edits apply: a member's AdapterInfo::applied_keys.
std::vector<std::string> llama_family_applied_keys(std::vector<std::string> member_keys = {});

// Granite's multipliers placed on a description (families/scalar_multipliers.hpp):
// the embedding Mul, the score divisor, the residual scale folded into every
// o_proj and down_proj, the logit scale into the head; their rewrites when
// any is not neutral (the adapter applying them names their keys in its info).
void apply_scalar_multipliers(DecoderModel& m, const ScalarMultipliers& multipliers);

}  // namespace llm2hef::families
