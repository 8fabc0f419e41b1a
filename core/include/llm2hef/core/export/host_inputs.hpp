// Runtime-equivalent host inputs: exactly what the Hailo genai runtime feeds
// the exported graph for a prompt (hailo-contract.md section 9), computed from
// an export folder's resources. The DFC calibration set and the numerics tests
// both come from here.
#pragma once

#include <filesystem>
#include <vector>

#include "llm2hef/core/io/npy.hpp"

namespace llm2hef::core {

enum class InputLayout {
  onnx,    // shapes of the exported ONNX: pe tables [1, N, T] (the graph tiles them)
  device,  // after the HAR fixup widened the pe inputs: [1, N, T * tiles], as the runtime writes them
};

// A prompt of n <= N tokens run as one base-graph pass: tokens bottom-aligned
// in rows N-n..N-1 at positions 0..n-1; padding rows above (zero embeddings,
// position 0, mask allowing every column); real rows blocking the padding
// columns and the future. Returns the six inputs by ONNX name plus
// `positions` (int64 [N]).
std::vector<NpzMember> runtime_inputs(const std::filesystem::path& export_dir, const std::vector<int64_t>& tokens,
                                      InputLayout layout);

}  // namespace llm2hef::core
