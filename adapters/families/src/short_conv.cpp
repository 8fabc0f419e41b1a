#include "llm2hef/families/short_conv.hpp"

#include <utility>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::families {

CausalShifts causal_shifts(GraphBuilder& g, const Value& mask, int64_t n, int64_t kernel) {
  if (kernel < 1) throw InternalError("causal_shifts: kernel must be >= 1");
  auto s = g.scope("conv_shifts");
  CausalShifts out;
  if (kernel == 1) return out;
  // One head's block of the additive mask [1, 1, N, N], to [1, N, N] as
  // attention merges its heads (Transpose, then Reshape: a one-head merge,
  // never a bare rank-4 -> rank-3 Reshape, which no public DFC parse shows).
  // Then 1 allowed / 0 blocked:
  // 0 * (1/100) + 1 = 1 and -100 * 0.01f = -1.0f exactly in float32, + 1 = 0.
  const Value block = head_mask(g, mask, n);
  const Value rows = g.transpose(block, {0, 2, 1, 3}, "mask/Transpose");
  const Value head = g.reshape(rows, {1, n, n}, "mask/Reshape");
  const float scale = -1.0f / kMaskBlocked;
  // "one" before "scale": the initializer order exports have always had.
  const Value one = g.scalar("one", 1.0f);
  const Value scale_v = g.scalar("scale", scale);
  const Value blocked = g.mul(head, scale_v, "allowed/Mul");
  const Value a = g.add(blocked, one, "allowed/Add");
  // shift_left[k, j] = 1 iff k = j + 1: (a shift_left)[r, j] = a[r, j + 1], 0 in the last column.
  Value shift_left = g.constant_rows("shift_left", {n, n}, [n](int64_t r0, int64_t r1, std::span<float> v) {
    for (int64_t r = r0; r < r1; ++r)
      if (r >= 1) v[static_cast<size_t>((r - r0) * n + (r - 1))] = 1.0f;
  });
  std::vector<Value> shifted{a};  // shifted[s] = a_s
  for (int64_t k = 1; k <= kernel; ++k)
    shifted.push_back(g.matmul(shifted.back(), shift_left, "a_" + std::to_string(k) + "/MatMul"));
  for (int64_t k = 1; k < kernel; ++k) {
    const std::string name = "d_" + std::to_string(k);
    Value edge = g.sub(shifted[static_cast<size_t>(k)], shifted[static_cast<size_t>(k + 1)], name + "/Sub");
    const Value d = g.mul(a, edge, name + "/Mul");
    // Split as attention splits its heads (Reshape, then Transpose), with
    // one head: D_s is the probabilities of a one-head attention.
    const Value split = g.reshape(d, {1, n, 1, n}, name + "/Reshape");
    out.shift.push_back(g.transpose(split, {0, 2, 1, 3}, name + "/Transpose"));
  }
  return out;
}

Value short_conv(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const CausalShifts& shifts,
                 const ShortConvSpec& spec) {
  const int64_t h = spec.hidden, l = spec.kernel;
  if (static_cast<int64_t>(shifts.shift.size()) != l - 1)
    throw InternalError("short_conv: " + std::to_string(shifts.shift.size()) + " shift matrices for a kernel of " +
                        std::to_string(l));
  ckpt.expect(spec.in_proj, {3 * h, h});
  ckpt.expect(spec.conv, {h, 1, l});
  ckpt.expect(spec.out_proj, {h, h});
  if (spec.conv_bias) ckpt.expect(*spec.conv_bias, {h});

  auto part = [&](const char* name, int64_t index) {
    auto ps = g.scope(name);
    return linear(g, ckpt, x, {spec.in_proj, spec.in_proj_bias, WeightLayout::out_in, index * h, (index + 1) * h});
  };
  Value b = part("in_proj_b", 0), c = part("in_proj_c", 1), xs = part("in_proj_x", 2);
  Value bx = g.mul(b, xs, "bx/Mul");
  // B*x as the values of a one-head attention: [1, N, H] -> [1, 1, N, H] by
  // the head split's Reshape and Transpose, so each shift is the P V MatMul
  // of the proven attention, [1, 1, N, N] x [1, 1, N, H], merged back by its
  // Transpose and Reshape.
  const int64_t n = x.shape[1];
  const Value bx_rows = g.reshape(bx, {1, n, 1, h}, "bx/Reshape");
  const Value bx_head = g.transpose(bx_rows, {0, 2, 1, 3}, "bx/Transpose");

  // conv weight [H, 1, L]: tap L-1 is the current step, tap L-1-s the step s back.
  const std::vector<float> w = ckpt.read(spec.conv);
  auto tap = [&](int64_t s) {
    std::vector<float> v(static_cast<size_t>(h));
    for (int64_t ch = 0; ch < h; ++ch) v[static_cast<size_t>(ch)] = w[static_cast<size_t>(ch * l + (l - 1 - s))];
    return g.constant("tap_" + std::to_string(s), {h}, v);
  };
  Value conv = g.mul(bx, tap(0), "tap_0/Mul");
  for (int64_t s = 1; s < l; ++s) {
    const std::string shift = "shift_" + std::to_string(s), tap_name = "tap_" + std::to_string(s);
    // Bx is the second operand: the DFC caches it, as it caches V in P V.
    const Value past_head = g.matmul(shifts.shift[static_cast<size_t>(s - 1)], bx_head, shift + "/MatMul");
    const Value past_rows = g.transpose(past_head, {0, 2, 1, 3}, shift + "/Transpose");
    const Value past = g.reshape(past_rows, {1, n, h}, shift + "/Reshape");
    const Value w_s = tap(s);
    const Value term = g.mul(past, w_s, tap_name + "/Mul");
    conv = g.add(conv, term, tap_name + "/Add");
  }
  if (spec.conv_bias) conv = g.add(conv, g.weight("conv_bias", ckpt, *spec.conv_bias), "conv_bias/Add");
  Value y = g.mul(c, conv, "cy/Mul");
  auto os = g.scope("out_proj");
  return linear(g, ckpt, y, {spec.out_proj, spec.out_proj_bias});
}

ShortConvCost short_conv_cost(int64_t n, int64_t h, int64_t kernel) {
  ShortConvCost c;
  if (kernel <= 1) return c;
  c.shift_constant_values = n * n;
  c.mask_macs_per_row = kernel * n * n;
  c.per_layer_matmuls = kernel - 1;
  c.per_layer_macs_per_row = (kernel - 1) * n * h;
  c.per_layer_cached_values = n * h;
  return c;
}

namespace {

// The graph's shift matrices (DecoderContext::input), one set per graph for
// the kernel of the first conv that asks: every request is the same input,
// since a second set would reuse the names of the first. short_conv()
// refuses a conv of another kernel (LFM2 has one, conv_L_cache).
struct ConvShifts {
  using Result = CausalShifts;
  int64_t kernel = 0;
  bool operator==(const ConvShifts&) const { return true; }
  Result make(GraphBuilder& g, const DecoderContext& ctx) const {
    return causal_shifts(g, ctx.io.runtime.mask, ctx.plan.cache_size, kernel);
  }
};

}  // namespace

CustomBody short_conv_body(ShortConvSpec spec) {
  CustomBody body;
  body.tensors.add(spec.in_proj, {3 * spec.hidden, spec.hidden});
  body.tensors.add(spec.conv, {spec.hidden, 1, spec.kernel});
  body.tensors.add(spec.out_proj, {spec.hidden, spec.hidden});
  if (spec.in_proj_bias) body.tensors.add(*spec.in_proj_bias, {3 * spec.hidden});
  if (spec.conv_bias) body.tensors.add(*spec.conv_bias, {spec.hidden});
  if (spec.out_proj_bias) body.tensors.add(*spec.out_proj_bias, {spec.hidden});
  const int64_t kernel = spec.kernel;
  body.inputs = [kernel](GraphBuilder& g, const DecoderContext& ctx) { ctx.input(g, ConvShifts{kernel}); };
  body.build = [spec = std::move(spec)](GraphBuilder& g, const DecoderContext& ctx, const Value& x) {
    const CausalShifts& shifts = ctx.input(g, ConvShifts{spec.kernel});
    return short_conv(g, ctx.ckpt, x, shifts, spec);
  };
  return body;
}

}  // namespace llm2hef::families
