#include "llm2hef/sdk/sliding_window_band.hpp"

namespace llm2hef::sdk {

Value sliding_window_band(GraphBuilder& g, int64_t heads, int64_t seq, int64_t window) {
  auto s = g.scope("sliding_window");
  // Row i is query row i % seq of head i / seq: every head gets the same band.
  return g.constant_rows("band", {1, heads, seq, seq}, [=](int64_t r0, int64_t r1, std::span<float> out) {
    for (int64_t i = r0; i < r1; ++i) {
      const int64_t r = i % seq;
      for (int64_t c = 0; c + window <= r; ++c) out[static_cast<size_t>((i - r0) * seq + c)] = -100.0f;
    }
  });
}

}  // namespace llm2hef::sdk
