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
#pragma once

#include <cstdint>

#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// The band [1, 1, seq, seq], one constant for every sliding layer.
Value sliding_window_band(GraphBuilder& g, int64_t seq, int64_t window);

}  // namespace llm2hef::sdk
