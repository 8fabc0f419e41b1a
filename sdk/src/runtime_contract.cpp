#include "llm2hef/sdk/runtime_contract.hpp"

#include <cmath>

namespace llm2hef::sdk {

void runtime_pe_row(std::span<const float> theta, int64_t position, std::span<float> cos_out,
                    std::span<float> sin_out) {
  const float p = static_cast<float>(position);
  for (size_t l = 0; l < theta.size(); ++l) {
    // volatile-free on purpose: one float multiply, no contraction possible.
    const float angle = theta[l] * p;
    cos_out[l] = std::cos(angle);
    sin_out[l] = std::sin(angle);
  }
}

}  // namespace llm2hef::sdk
