// Fused projections split at export. A contiguous block of output features
// (Phi-3's qkv_proj and gate_up_proj) is a LinearSpec column range; a
// strided one — GPT-NeoX's query_key_value, laid out per head as
// [heads, 3, head_dim] — is gathered here into its own constant, so the
// graph holds three plain projections and the bytes in model.onnx.data are
// the q, k and v weights side by side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/sdk/checkpoint.hpp"
#include "llm2hef/sdk/graph_builder.hpp"

namespace llm2hef::sdk {

// x W[rows]^T (+ b[rows]) for an nn.Linear weight [out, in]: the output
// features `rows`, in that order, as a [in, rows] constant ("weight") and a
// [rows] constant ("bias").
Value linear_rows(GraphBuilder& g, const Checkpoint& ckpt, const Value& x, const std::string& weight,
                  const std::optional<std::string>& bias, const std::vector<int64_t>& rows);

// The output rows of part `part` (0 q, 1 k, 2 v) of a per-head interleaved
// fused qkv: head h, dimension i is row h*3*D + part*D + i.
std::vector<int64_t> interleaved_qkv_rows(int64_t heads, int64_t head_dim, int part);

}  // namespace llm2hef::sdk
