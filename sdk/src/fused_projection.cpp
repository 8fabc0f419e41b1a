#include "llm2hef/sdk/fused_projection.hpp"

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

Value linear_rows(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight,
                  const std::optional<std::string>& bias, const std::vector<int64_t>& rows) {
  const TensorInfo& ti = ckpt.info(weight);
  if (ti.shape.size() != 2 || ti.shape[1] != x.shape.back())
    throw BadInput(ti.file.string() + ": tensor '" + weight + "' has shape " + shape_string(ti.shape) +
                   ", expected [out, " + std::to_string(x.shape.back()) + "]");
  const int64_t in = ti.shape[1], n = static_cast<int64_t>(rows.size());
  for (int64_t r : rows)
    if (r < 0 || r >= ti.shape[0]) throw InternalError("linear_rows: row " + std::to_string(r) + " out of range");
  const std::vector<float> w = ckpt.read(weight);
  Value wt = g.constant_rows("weight", {in, n}, [&](int64_t r0, int64_t r1, std::span<float> out) {
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t c = 0; c < n; ++c)
        out[static_cast<size_t>((i - r0) * n + c)] = w[static_cast<size_t>(rows[static_cast<size_t>(c)] * in + i)];
  });
  Value y = g.matmul(x, wt);
  if (!bias) return y;
  ckpt.expect(*bias, {ti.shape[0]});
  const std::vector<float> b = ckpt.read(*bias);
  std::vector<float> picked(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) picked[static_cast<size_t>(c)] = b[static_cast<size_t>(rows[static_cast<size_t>(c)])];
  return g.add(y, g.constant("bias", {n}, picked));
}

std::vector<int64_t> interleaved_qkv_rows(int64_t heads, int64_t d, int part) {
  std::vector<int64_t> rows;
  rows.reserve(static_cast<size_t>(heads * d));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < d; ++i) rows.push_back(h * 3 * d + part * d + i);
  return rows;
}

}  // namespace llm2hef::sdk
