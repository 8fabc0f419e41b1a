// Learned absolute position embeddings (GPT-2's wpe) carried through the
// runtime's cos/sin channel.
//
// The runtime feeds cos(theta_k p) and sin(theta_k p) for every position p. With
// theta_k = 2 pi k / N, k = 0..floor(N/2), those functions span every sequence
// over positions 0..N-1 (a discrete Fourier basis), so wpe[p] is exactly a
// linear combination of the tables: wpe = C A + S B. Rather than the textbook
// DFT coefficients, A and B are solved against the tables the runtime will
// really compute (float32 angles, float32 cos/sin), which removes the error
// the float32 angle rounding would otherwise add at large positions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "llm2hef/sdk/blocks.hpp"
#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

struct FourierPositions {
  int64_t positions = 0;        // N
  int64_t width = 0;            // H
  int64_t frequencies = 0;      // K = floor(N/2) + 1
  std::vector<float> theta;     // T = K rounded up to even (the runtime fills only even widths)
  std::vector<float> cos_coef;  // [T, H], row k multiplies cos(theta_k p)
  std::vector<float> sin_coef;  // [T, H]
  // max |reconstruction - wpe| over all positions and channels, evaluated in
  // double from the float32 coefficients and the runtime's float32 tables.
  double max_abs_error = 0;
  // Same figure for plain DFT coefficients (for the docs' comparison).
  double dft_max_abs_error = 0;
};

// theta_k = 2 pi k / N for k = 0..floor(N/2), zero-padded to an even length:
// the theta resource of a model whose positions go through this basis.
std::vector<float> fourier_theta(int64_t positions);

// `wpe` is row-major [positions, width] (rows 0..N-1 of the learned table).
FourierPositions fit_learned_positions(std::span<const float> wpe, int64_t positions, int64_t width);

// Rows [first_row, first_row + n) of the checkpoint's position table `table`
// ([rows, width]) as a graph value [1, n, width] built from the runtime's pe
// tables (theta = fourier_theta(n), length t): wpe[p] = sum_k A_k cos(theta_k p)
// + B_k sin(theta_k p), the q tables carrying columns [0, t/2) and the k tables
// [t/2, t), each through the first head block of its tiled table, so all four
// inputs are consumed. In scope "positions"; the fit errors are annotated.
// GPT-2 reads rows 0.., OPT rows 2.. (its offset).
Value learned_positions(GraphBuilder& g, const Checkpoint& ckpt, const std::string& table, int64_t first_row,
                        const PeTables& pe, int64_t n, int64_t t, int64_t width);

}  // namespace llm2hef::sdk
