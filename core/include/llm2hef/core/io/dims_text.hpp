// Shapes in messages. A crafted file can declare a tensor of a thousand
// dimensions; a refusal that prints each one buries the reason, so shapes are
// printed capped, and readers refuse ranks no model weight or array has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace llm2hef::core {

// The most dimensions a tensor or array read by llm2hef may have (weights are
// at most 4-D; conv kernels in a HAR 4-D). More is refused naming the count.
inline constexpr size_t kMaxTensorRank = 8;

// "[300, 64]"; beyond kMaxTensorRank dimensions, the first ones and the count:
// "[300, 64, 1, 1, 1, 1, 1, 1, ... (1002 dimensions)]".
std::string dims_text(const std::vector<int64_t>& dims);

}  // namespace llm2hef::core
