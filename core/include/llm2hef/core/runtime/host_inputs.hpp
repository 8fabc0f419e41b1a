// Runtime-equivalent host inputs: exactly what the Hailo genai runtime feeds
// the exported graph for a prompt (hailo-contract.md section 9), computed from
// an export folder's resources. The DFC calibration set and the numerics tests
// both come from here.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/io/npy.hpp"
#include "llm2hef/sdk/runtime_contract.hpp"

namespace llm2hef::core {

enum class InputLayout {
  onnx,    // shapes of the exported ONNX: pe tables [1, N, T] (the graph tiles them)
  device,  // after the HAR fixup widened the pe inputs: [1, N, T * tiles], as the runtime writes them
};

// The most values runtime_inputs() builds in one tensor (8 GiB of float32).
// The largest are the attention mask [N, heads * N], the embeddings
// [N, hidden] and the pe tables [N, T * tiles]; compile.py builds its
// calibration set with `llm2hef inputs`, so this is compile.py's limit too.
inline constexpr int64_t kMaxInputElements = int64_t{1} << 31;

// The largest cache size N whose inputs stay within kMaxInputElements (with
// 14 heads: 12385, bound by the mask).
int64_t largest_calibration_cache(const sdk::RuntimeSizes& sizes);

// The RAM the DFC's user guide asks for the DFC itself (16 GB); compile.py
// checks the calibration set on top of it.
inline constexpr int64_t kDfcMinimumRamBytes = int64_t{16} * 1000 * 1000 * 1000;

// One calibration sample as compile.py holds it: float32, every input other
// than the pe tables at its graph shape's last two dimensions, and one row
// of positions the pe tables share.
int64_t calibration_sample_bytes(const sdk::RuntimeSizes& sizes);

// What compile.py's optimize step needs in RAM for `samples` calibration
// samples: the DFC's 16 GB, the set and one sample being read.
double calibration_ram_bytes(const sdk::RuntimeSizes& sizes, int64_t samples);

// Why compile.py could not calibrate an export of these sizes (the cache is
// past largest_calibration_cache), naming the largest cache it can and the
// RAM its optimize step needs there for `samples` samples; nullopt when it can.
std::optional<std::string> calibration_limit_warning(const sdk::RuntimeSizes& sizes, int64_t samples);

// A prompt of n <= N tokens run as one base-graph pass: tokens bottom-aligned
// in rows N-n..N-1 at positions 0..n-1; padding rows above (zero embeddings,
// position 0, mask allowing every column); real rows blocking the padding
// columns and the future. Returns the six inputs by ONNX name plus
// `positions` (int64 [N]).
std::vector<NpzMember> runtime_inputs(const std::filesystem::path& export_dir, const std::vector<int64_t>& tokens,
                                      InputLayout layout);

}  // namespace llm2hef::core
