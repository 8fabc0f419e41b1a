#include "llm2hef/sdk/rope_bases.hpp"

#include <string>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

std::vector<float> rope_bases_theta(const std::vector<std::vector<float>>& inv_freqs) {
  std::vector<float> theta;
  for (const std::vector<float>& inv : inv_freqs) {
    if (inv.size() != inv_freqs.front().size()) throw InternalError("rope bases of different widths");
    theta.insert(theta.end(), inv.begin(), inv.end());
    theta.insert(theta.end(), inv.begin(), inv.end());
  }
  return theta;
}

std::vector<PeTables> select_rope_bases(GraphBuilder& g, const PeTables& tiled, int64_t bases, int64_t heads,
                                        int64_t kv_heads, int64_t d) {
  if (bases <= 1) return {tiled};
  auto s = g.scope("rope_bases");
  // [tiles*bases*d, tiles*d]: head h's columns b*d..b*d+d-1 of its block.
  auto pick = [&](int64_t base, int64_t tiles, const std::string& leaf) {
    const int64_t in_w = tiles * bases * d, out_w = tiles * d;
    return g.constant_rows(leaf, {in_w, out_w}, [=](int64_t r0, int64_t r1, std::span<float> out) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t h = r / (bases * d), within = r % (bases * d);
        if (within / d == base) out[static_cast<size_t>((r - r0) * out_w + h * d + within % d)] = 1.0f;
      }
    });
  };
  std::vector<PeTables> out;
  for (int64_t b = 0; b < bases; ++b) {
    const std::string n = "base" + std::to_string(b);
    const Value q_pick = pick(b, heads, n + "_q_pick");
    const Value k_pick = kv_heads == heads ? q_pick : pick(b, kv_heads, n + "_k_pick");
    PeTables t;
    t.q_cos = g.matmul(tiled.q_cos, q_pick, n + "/q_cos/MatMul");
    t.q_sin = g.matmul(tiled.q_sin, q_pick, n + "/q_sin/MatMul");
    t.k_cos = g.matmul(tiled.k_cos, k_pick, n + "/k_cos/MatMul");
    t.k_sin = g.matmul(tiled.k_sin, k_pick, n + "/k_sin/MatMul");
    out.push_back(t);
  }
  return out;
}

}  // namespace llm2hef::sdk
