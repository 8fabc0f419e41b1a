// Partial rotary embeddings (GPT-NeoX, Phi-2, StableLM, Phi-4-mini): HF
// rotates only the first rotary_dim = int(head_dim * partial_rotary_factor)
// dimensions of each head, with rotate_half inside them, and passes the rest
// through. The runtime computes cos/sin(theta[l] * p) for every theta entry,
// so theta = [inv_freq, inv_freq, 0 ... 0] (head_dim entries) gives cos 1 and
// sin 0 on the pass-through dimensions, and apply_rope(..., rotary_dim) has a
// rotate-half matrix that is zero there: x * 1 + 0 = x, exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

// Where a family's config keeps its rope settings besides the standard keys.
struct RopeKeys {
  double default_factor = 1.0;         // the config class's default partial_rotary_factor
  const char* factor_alias = nullptr;  // an older spelling of partial_rotary_factor ("rotary_pct")
  const char* base_alias = nullptr;    // an older spelling of rope_theta ("rotary_emb_base")
};

// config.json with `rope_theta` and `partial_rotary_factor` set at the top
// level to the values Hugging Face's config class settles on: a value inside
// rope_parameters / rope_scaling wins (HF's setdefault), then the top-level
// key or its alias, then the default (rope_theta 10000).
JsonFile resolve_rope_keys(const JsonFile& config, const RopeKeys& keys);

// int(head_dim * partial_rotary_factor), as HF truncates it; checked to be a
// positive even number no larger than head_dim (`config` must come from
// resolve_rope_keys).
int64_t rotary_dims(const JsonFile& config, int64_t head_dim);

// [inv_freq, inv_freq, zeros] of length head_dim (inv_freq has rotary_dim/2 entries).
std::vector<float> partial_rotary_theta(const std::vector<float>& inv_freq, int64_t head_dim);

// All of the above for a family with default / linear / llama3 RoPE:
// rotary_dim, HF's inv_freq over it, and the theta resource.
struct PartialRope {
  int64_t rotary_dim = 0;
  std::vector<float> inv_freq;
  std::vector<float> theta;
};
PartialRope read_partial_rope(const JsonFile& config, int64_t head_dim, const RopeKeys& keys,
                              std::vector<std::string>& rewrites);

}  // namespace llm2hef::sdk
