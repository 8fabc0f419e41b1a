#include "llm2hef/sdk/head_norm.hpp"

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

namespace {

// S [heads*D, heads]: S[i][h] = 1 when column i belongs to head h. x S sums
// each head's D columns; (.) S^T spreads a per-head value back over them.
Value segment_sum(GraphBuilder& g, int64_t heads, int64_t d) {
  return g.constant_rows("segment_sum", {heads * d, heads}, [=](int64_t r0, int64_t r1, std::span<float> out) {
    for (int64_t i = r0; i < r1; ++i) out[static_cast<size_t>((i - r0) * heads + i / d)] = 1.0f;
  });
}

}  // namespace

Value head_rms_norm(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight, int64_t heads,
                    int64_t d, float eps, float weight_offset) {
  ckpt.expect(weight, {d});
  // One head: the norm over each head is the norm over all of x. The segment
  // form would be a 1-wide MatMul and a spread back, which no public DFC
  // parse shows; the RMSNorm spelling of every layer norm is the proven one
  // (hailo-contract.md section 2, "Op patterns"). Gemma 3's k (every released
  // size has one KV head) takes this path.
  if (heads == 1) return rms_norm(g, ckpt, x, weight, eps, weight_offset);
  const int64_t w = heads * d;
  const Value seg = segment_sum(g, heads, d);
  // LNM's spelling: sumsq = x^2 S; var = (sumsq S^T) / HD, with S^T a
  // Transpose of the constant (torch keeps it: no constant folding), then
  // rsqrt as Sqrt and Div(1, .).
  Value sumsq = g.matmul(g.pow(x, 2.0f), seg, "sumsq/MatMul");
  Value spread = g.matmul(sumsq, g.transpose(seg, {1, 0}, "segment_sum/Transpose"), "spread/MatMul");
  Value var = g.div(spread, g.scalar("head_dim", static_cast<float>(d)), "mean/Div");
  Value inv = inverse_sqrt(g, g.add(var, g.scalar("eps", eps)));
  const std::vector<float> wv = ckpt.read(weight);
  std::vector<float> tiled(static_cast<size_t>(w));
  for (int64_t i = 0; i < w; ++i)
    tiled[static_cast<size_t>(i)] =
        weight_offset == 0.0f ? wv[static_cast<size_t>(i % d)] : weight_offset + wv[static_cast<size_t>(i % d)];
  // Constant first, then the Muls: the order exports have always had.
  const Value w_tiled = g.constant("weight", {w}, tiled);
  const Value normed = g.mul(x, inv);
  return g.mul(normed, w_tiled);
}

std::vector<float> tiled_head_vector(const Checkpoint& ckpt, const std::vector<std::string>& tensors, int64_t heads,
                                     int64_t d) {
  if (tensors.size() != 1 && static_cast<int64_t>(tensors.size()) != heads)
    throw InternalError("tiled_head_vector: one tensor or one per head");
  std::vector<float> out(static_cast<size_t>(heads * d));
  for (int64_t h = 0; h < heads; ++h) {
    const std::string& name = tensors.size() == 1 ? tensors[0] : tensors[static_cast<size_t>(h)];
    ckpt.expect(name, {d});
    const std::vector<float> v = ckpt.read(name);
    for (int64_t i = 0; i < d; ++i) out[static_cast<size_t>(h * d + i)] = v[static_cast<size_t>(i)];
  }
  return out;
}

Value head_layer_norm(GraphBuilder& g, const Value& x, const std::vector<float>& weight, const std::vector<float>& bias,
                      int64_t heads, int64_t d, float eps) {
  const int64_t w = heads * d;
  const Value seg = segment_sum(g, heads, d);
  const Value spread_m = g.transpose(seg, {1, 0}, "segment_sum/Transpose");
  const Value dim = g.scalar("head_dim", static_cast<float>(d));
  // mean per head, spread back over its D columns; then the biased variance
  // of the centred values the same way (torch's LayerNorm: two passes).
  Value sum = g.matmul(g.matmul(x, seg, "sum/MatMul"), spread_m, "sum_spread/MatMul");
  Value centred = g.sub(x, g.div(sum, dim, "mean/Div"), "centre/Sub");
  Value sumsq = g.matmul(g.matmul(g.pow(centred, 2.0f), seg, "sumsq/MatMul"), spread_m, "sumsq_spread/MatMul");
  Value var = g.div(sumsq, dim, "var/Div");
  Value inv = inverse_sqrt(g, g.add(var, g.scalar("eps", eps)));
  const Value w_tiled = g.constant("weight", {w}, weight);
  Value y = g.mul(g.mul(centred, inv), w_tiled);
  if (bias.empty()) return y;
  return g.add(y, g.constant("bias", {w}, bias));
}

std::function<Value(GraphBuilder&, const Value&)> head_layer_norm_fn(const Checkpoint& ckpt,
                                                                     std::vector<std::string> weights,
                                                                     std::vector<std::string> biases, int64_t heads,
                                                                     int64_t d, float eps) {
  return [&ckpt, weights = std::move(weights), biases = std::move(biases), heads, d, eps](GraphBuilder& g,
                                                                                          const Value& x) {
    const std::vector<float> w = tiled_head_vector(ckpt, weights, heads, d);
    const std::vector<float> b = biases.empty() ? std::vector<float>{} : tiled_head_vector(ckpt, biases, heads, d);
    return head_layer_norm(g, x, w, b, heads, d, eps);
  };
}

}  // namespace llm2hef::sdk
