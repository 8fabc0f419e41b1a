// What Gemma 2 and Gemma 3 (text) share on top of the post-norm decoder
// (docs/architectures.md section 8): sandwich norms scaling by (1 + w), embeddings
// scaled by sqrt(hidden), GeGLU with the tanh GELU, query_pre_attn_scalar,
// final-logit soft-capping, sliding-window layers chosen by layer_types.
// The two generations differ in QK-Norm, attention soft-capping and RoPE:
// Gemma 2 has one base; Gemma 3 a local base for its sliding layers and a
// global one (possibly linearly scaled) for its full-attention layers.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/families/families.hpp"
#include "llm2hef/families/post_norm_decoder.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::families {

enum class GemmaGeneration { gemma2, gemma3 };

// The Gemma description: describe_post_norm_decoder() edited with every
// Gemma key; refuses what has no exact formulation here, naming the key and
// value.
DecoderModel describe_gemma_family(const Checkpoint& ckpt, GemmaGeneration generation);

// The forward keys (sdk/forward_keys.hpp) describe_gemma_family() applies:
// a Gemma adapter's AdapterInfo::applied_keys.
std::vector<std::string> gemma_family_applied_keys();

}  // namespace llm2hef::families
