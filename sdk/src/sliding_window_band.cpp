#include "llm2hef/sdk/sliding_window_band.hpp"

#include <vector>

namespace llm2hef::sdk {

Value sliding_window_band(GraphBuilder& g, int64_t seq, int64_t window) {
  auto s = g.scope("sliding_window");
  std::vector<float> band(static_cast<size_t>(seq * seq), 0.0f);
  for (int64_t r = 0; r < seq; ++r)
    for (int64_t c = 0; c + window <= r; ++c) band[static_cast<size_t>(r * seq + c)] = -100.0f;
  return g.constant("band", {1, 1, seq, seq}, band);
}

}  // namespace llm2hef::sdk
