#include "llm2hef/sdk/runtime_contract.hpp"

#include <cmath>

#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::sdk {

const RuntimeInput* find_runtime_input(std::string_view role) {
  for (const RuntimeInput& input : kRuntimeInputs)
    if (input.role == role) return &input;
  return nullptr;
}

RuntimeSizes runtime_sizes(const Plan& plan) {
  return {plan.cache_size, plan.dims.hidden, plan.dims.heads, static_cast<int64_t>(plan.theta.size()),
          plan.pe_q_tiles, plan.pe_k_tiles};
}

std::vector<int64_t> graph_shape(const RuntimeInput& input, const RuntimeSizes& s) {
  switch (input.shape) {
    case InputShape::embeddings: return {1, s.cache, s.hidden};
    case InputShape::mask: return {1, 1, s.cache, s.heads * s.cache};
    case InputShape::pe_table: break;
  }
  return {1, s.cache, s.theta};
}

std::vector<int64_t> device_shape(const RuntimeInput& input, const RuntimeSizes& s) {
  std::vector<int64_t> shape = graph_shape(input, s);
  if (input.tiling == PeTiling::q_heads) shape.back() *= s.q_tiles;
  if (input.tiling == PeTiling::k_heads) shape.back() *= s.k_tiles;
  return shape;
}

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
