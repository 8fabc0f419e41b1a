// The sliding-window policy (hailo-contract.md section 2, "Sliding window").
//
// The genai runtime builds one attention mask, shared by every layer, and it
// has no window setting (section 9, "Mask rows"): a query sees every earlier
// token in the cache. A layer whose window is at least the cache size sees
// exactly that, so a sliding-window model is exact when --cache <= window;
// beyond it the window would have to cut the shared mask per layer, which the
// runtime cannot do, so the export is refused with the largest exact cache.
//
// Transformers' rule (masking_utils.sliding_window_overlay): a query at
// position q sees key k iff q - window < k <= q. With positions 0..N-1 the
// largest distance is N-1, so the window bites only when N > window.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

struct SlidingWindow {
  int64_t window = 0;        // 0: no layer slides
  std::vector<bool> layers;  // per layer: true = this layer uses the window
  std::string where;         // "<config.json>: field 'sliding_window'", for messages

  bool any() const;
  std::string layer_list() const;  // "all 4 layers" or "layers 1,3"
};

// How transformers decides which layers slide, for every family that has the
// keys (read whatever adapter is used, so that forcing another adapter cannot
// skip the window):
// - `sliding_window` absent or null: no window;
// - `use_sliding_window` false (Qwen2, Qwen3, SmolLM3 configs): no window;
// - `layer_types` given: the layers marked "sliding_attention";
// - else `max_window_layers` given (Qwen2's rule): layers i >= max_window_layers;
// - else every layer (Mistral).
// `layer_types` is checked whether or not a window is set: a list of
// `layers` strings, each full_attention or sliding_attention (BadInput for
// another shape, Unsupported naming the layer for another kind), so that a
// value is never silently read as "every layer full".
SlidingWindow read_sliding_window(const JsonFile& config, int64_t layers);

// Applies the policy for `options.cache_size`: when no layer slides, or the
// cache fits in the window, adds a note saying every layer attends to the
// whole cache (exact); otherwise throws Unsupported naming the key, its value
// and the largest exact cache size, and `alternative` (what else the adapter
// offers) when given.
void apply_sliding_window(Plan& plan, const ExportOptions& options, const SlidingWindow& window,
                          const std::string& alternative = "");

}  // namespace llm2hef::sdk
