// Short causal convolutions over time (LFM2's Lfm2ShortConv) carried exactly
// by the runtime's KV-cache mechanism. LFM2's alone, so in the families
// library (docs/plugin-abi.md): a body of the SDK's custom kind that brings
// its own per-graph input.
//
// The Hailo genai runtime feeds six inputs and caches only the second operand
// of attention-style matmuls, so a Conv1d over the sequence axis has no place
// in the graph. Instead, each tap s >= 1 of the kernel becomes a shift matrix
// D_s built from the additive mask alone, and the conv is
//
//   out = w_0 * Bx + sum_{s=1..L-1} w_s * (D_s Bx)  (+ bias),
//
// where D_s Bx is a matmul whose second operand, Bx [N, H], is the one the DFC
// caches (shape[-2] == cache size), exactly like P V in attention: it is
// written as the P V of a one-head attention, D_s [1, 1, N, N] times Bx split
// to [1, 1, N, H] and merged back in the head split's and merge's spellings,
// so every op is one the proven attention has (no rank-3 activation MatMul,
// no bare Reshape).
//
// Why the mask: for every real query row the runtime's mask row allows one
// contiguous run of key columns that ends at the query's own column (older
// cache columns, then the causal block; hailo-contract.md section 9). With
// a = the multiplicative mask (1 allowed, 0 blocked) and a_s its columns
// shifted left by s (a_s[r, j] = a[r, j + s], zero past the edge),
//   a_s - a_{s+1}  is +1 at column r - s, -1 at column pad - s - 1, 0 elsewhere,
// and multiplying by a removes the -1 (that column is blocked), so
//   D_s = a * (a_s - a_{s+1})  is 1 exactly at the token s steps back,
// and 0 when that token is not in the allowed window. Everything is 0/1
// arithmetic: exact in float32 and under any quantization that keeps 0 and 1.
// Padding rows (allow everything) get a harmless shift of their own and are
// never read by real rows, whose mask blocks them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llm2hef/families/families.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/decoder_layer.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::families {

// D_1 .. D_{kernel-1}, each [1, 1, N, N] (one head's attention probabilities);
// built once per graph and shared by every conv layer. `mask` is the
// runtime's tiled additive mask [1, 1, N, heads*N].
struct CausalShifts {
  std::vector<Value> shift;  // shift[s - 1] = D_s
};
CausalShifts causal_shifts(GraphBuilder& g, const Value& mask, int64_t seq, int64_t kernel);

// Checkpoint tensors of one gated short-conv block (LFM2 layout):
// in_proj [3H, H] giving B, C, x in that channel order; conv [H, 1, L]
// (cross-correlation: tap L-1 multiplies the current step); out_proj [H, H].
struct ShortConvSpec {
  std::string in_proj, conv, out_proj;  // weight tensors
  std::optional<std::string> in_proj_bias, conv_bias, out_proj_bias;
  int64_t hidden = 0;
  int64_t kernel = 0;
};

// out_proj(C * causal_conv(B * x)) on x [1, N, H], every time interaction
// through `shifts` (which must have kernel-1 entries).
Value short_conv(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const CausalShifts& shifts,
                 const ShortConvSpec& spec);

// What the formulation adds to a graph with a cache of N positions, per query
// row (each generated token is one row; a prefill chunk of P rows costs P times
// the per-row figures), for plan notes, inspect and the docs.
struct ShortConvCost {
  int64_t shift_constant_values = 0;    // the [N, N] 0/1 shift constant (one, shared; applied `kernel` times)
  int64_t mask_macs_per_row = 0;        // kernel x N x N: shifting the mask, once per graph
  int64_t per_layer_matmuls = 0;        // D_s Bx products per conv layer (kernel - 1)
  int64_t per_layer_macs_per_row = 0;   // (kernel - 1) x N x H
  int64_t per_layer_cached_values = 0;  // B*x cached once: N x H
};
ShortConvCost short_conv_cost(int64_t seq, int64_t hidden, int64_t kernel);

// A layer's mixer body for `spec` (decoder_layer.hpp): it declares the
// spec's rows, asks for the graph's shift matrices before the first layer
// (one set per graph, for the kernel of the first conv layer; a conv of
// another kernel is refused), and builds short_conv() on the normed input.
CustomBody short_conv_body(ShortConvSpec spec);

}  // namespace llm2hef::families
