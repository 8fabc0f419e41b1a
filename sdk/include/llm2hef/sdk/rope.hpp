// Rotary position embeddings the Hailo way (hailo-contract.md section 2):
// the runtime computes cos/sin(theta * position); the graph rotates with a
// constant rotate-half matrix, so theta is all the model-specific RoPE math.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

// HF's inv_freq for `head_dim` (j = 0..head_dim/2-1), with the config's
// rope scaling folded in: default, "linear" and "llama3" (with its smoothing
// band); any other rope type is refused. Reads rope_theta / rope_scaling and
// their v5 spelling rope_parameters. Computed in float32 step by step as
// transformers does, so the result equals its inv_freq buffer.
// `rewrites` gets one line describing what was folded.
std::vector<float> rope_inv_freq(const JsonFile& config, int64_t head_dim, std::vector<std::string>& rewrites);

// The same for the first `rotary_dim` dimensions of a head (partial rotary:
// HF computes inv_freq over rotary_dim, j = 0..rotary_dim/2-1), without the
// partial_rotary_factor refusal; sdk/partial_rotary.hpp reads that factor.
std::vector<float> rope_inv_freq_dims(const JsonFile& config, int64_t rotary_dim, std::vector<std::string>& rewrites);

// The theta resource: inv_freq concatenated twice (HF's rotate_half layout).
std::vector<float> rope_theta_resource(const std::vector<float>& inv_freq);

// x * cos + (x R) * sin on [1, S, heads*head_dim], R the block-diagonal
// rotate-half matrix (per head: +1 at [i, i+D/2], -1 at [i+D/2, i]).
// With a partial `rotary_dim` (0 = head_dim) R rotates halves of the first
// rotary_dim dimensions of each head only (HF's rotate_half on q[..., :rot])
// and is zero on the rest, whose theta entries are 0 (cos 1, sin 0): those
// dimensions pass through as x * 1 + 0, exactly.
Value apply_rope(GraphBuilder& g, const Value& x, const Value& cos_tiled, const Value& sin_tiled, int64_t heads,
                 int64_t head_dim, int64_t rotary_dim = 0);

}  // namespace llm2hef::sdk
