// LongRoPE (Phi-3 / Phi-3.5 / Phi-4-mini): per-frequency rescale factors and
// an attention factor on cos/sin (transformers' _compute_longrope_parameters
// and longrope_frequency_update). HF picks the short factors while the
// sequence (largest position + 1) is at most original_max_position_embeddings
// and the long factors for every position once it is longer. A graph has one
// theta for every prompt length, so the export is exact for caches up to
// original_max_position_embeddings (short factors), and beyond it only when
// the two factor lists are equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/families/families.hpp"
#include "llm2hef/sdk/attention_block.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::families {

struct LongRope {
  std::vector<float> inv_freq;    // rotary_dim/2 entries, the short (or equal) factors folded in
  float attention_factor = 1.0f;  // multiplies cos and sin (the rotary dimensions of q and k)
  std::string rewrite;            // one line for the plan
  // original_max when the factor lists differ (0 when they are equal), and
  // why: the description's largest exact cache (decoder_model.hpp).
  int64_t largest_exact_cache = 0;
  std::string largest_exact_cache_reason;
};

// `config` as resolve_rope_keys leaves it (rope_theta and partial_rotary_factor
// at the top level), with a longrope rope dict. `original_max` is
// original_max_position_embeddings as the family's config class settles it.
// A larger cache would need the long factors; when they differ from the
// short ones the result names original_max as the largest exact cache.
LongRope longrope_inv_freq(const JsonFile& config, int64_t rotary_dim, int64_t original_max);

// The attention factor on cos and sin, i.e. on the rotary dimensions of q
// and k (the first `rotary_dim` of each head; 0 = all): a Mul by a constant
// (the factor there, 1 elsewhere) before RoPE, as AttentionBlockSpec::before_rope.
// Empty when the factor is 1.
decltype(AttentionBlockSpec::before_rope) longrope_attention_scale(float factor, int64_t rotary_dim);

}  // namespace llm2hef::families
