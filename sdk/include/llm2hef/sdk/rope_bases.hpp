// Several RoPE bases in one theta vector (Gemma 3: a local base for its
// sliding-window layers, a global one, possibly scaled, for its full-attention
// layers).
//
// The runtime has one theta resource and computes cos/sin(theta[l] * p) for
// every entry l (hailo-contract.md section 9), tiling the T-wide rows once
// per head. With B bases the theta vector holds each base's inv_freq twice
// (HF's rotate_half layout), side by side: T = B * head_dim, which stays even.
// After the tiling matmuls (the ones the HAR fixup deletes) a constant 0/1
// matmul per base keeps, in every head block, that base's head_dim columns;
// each layer then reads the tables of its own base. With one base nothing is
// added: the layout is the ordinary one.
#pragma once

#include <cstdint>
#include <vector>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// The theta resource: base 0's inv_freq twice, then base 1's twice, ...
// All bases must have head_dim / 2 entries.
std::vector<float> rope_bases_theta(const std::vector<std::vector<float>>& inv_freqs);

// The tiled tables of each base, [1, S, heads*head_dim] (q) and
// [1, S, kv_heads*head_dim] (k), from the tiled tables of all bases
// ([1, S, heads*bases*head_dim]); index = base. One base: `tiled` itself.
std::vector<PeTables> select_rope_bases(GraphBuilder& g, const PeTables& tiled, int64_t bases, int64_t heads,
                                        int64_t kv_heads, int64_t head_dim);

}  // namespace llm2hef::sdk
