// Sliding-window layers beyond the window, with the runtime's one shared mask
// (hailo-contract.md sections 2 and 9).
//
// In the runtime's layout the newest tokens sit at the right edge of the
// cache_size columns and a run's real tokens in the bottom rows, so the
// query-key distance of mask cell (r, c) is (cache_size - rows) + r - c
// whatever the cache usage; in the exported base graph (rows = SEQ =
// cache_size) it is r - c. A constant band, -100 (the runtime's blocked value)
// where r - c >= window and 0 elsewhere, added to the masked scores of a
// sliding-window layer, therefore blocks exactly the keys HF's sliding mask
// blocks (HF: key visible when 0 <= q - k < window). Exact in fp32 on the
// base graph; whether the DFC keeps such a constant [SEQ, SEQ] addend aligned
// with the bottom rows when it splits the graph into its prefill and
// token-by-token groups is NOT known (unproven on the DFC).
//
// The band is written at the scores' full shape [1, heads, seq, seq], one
// copy per head, never [1, 1, seq, seq] broadcast over the heads: the DFC
// broadcasts an ew_add operand over heads by repeating each element
// (AABBCC) where the head-major scores need tiling (ABCABC), the defect
// `har fix` repairs for the runtime mask (hailo-contract.md section 5,
// "Mask wiring"; LNM finding 4). It costs heads times the constant.
#pragma once

#include <cstdint>

#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// The band [1, heads, seq, seq], one constant for every sliding layer.
Value sliding_window_band(GraphBuilder& g, int64_t heads, int64_t seq, int64_t window);

// Its size in bytes (float32), for the plan's note.
constexpr int64_t sliding_window_band_bytes(int64_t heads, int64_t seq) { return heads * seq * seq * 4; }

}  // namespace llm2hef::sdk
