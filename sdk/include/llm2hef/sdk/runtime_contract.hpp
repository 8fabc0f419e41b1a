// What the Hailo genai runtime feeds a graph and how it computes it
// (hailo-contract.md sections 2 and 9). One definition for the graph builder,
// the host-input emulator, hailo-config and the DFC driver.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace llm2hef::sdk {

// Additive mask values as the DFC calibration and LNM's recipe use them
// (the runtime quantizes them to uint8 itself): 0 = may attend, -100 = blocked.
inline constexpr float kMaskAllowed = 0.0f;
inline constexpr float kMaskBlocked = -100.0f;

struct RuntimeInput {
  std::string_view role;  // key of hailo-config input_layers_names_suffixes
  std::string_view name;  // ONNX input name
};

// ONNX input order = the DFC's input_layer1..6 numbering. pe_q before pe_k
// matches the runtime's default suffixes (section 9); hailo-config still
// spells every suffix out.
inline constexpr std::array<RuntimeInput, 6> kRuntimeInputs = {{
    {"embeddings", "inputs_embeds"},
    {"attention_mask", "attention_mask"},
    {"pe_q_cos", "pe_q_cos"},
    {"pe_q_sin", "pe_q_sin"},
    {"pe_k_cos", "pe_k_cos"},
    {"pe_k_sin", "pe_k_sin"},
}};

// cos/sin(theta[l] * position) exactly as the runtime computes them: the
// product rounded to float32, then float32 cos and sin.
void runtime_pe_row(std::span<const float> theta, int64_t position, std::span<float> cos_out,
                    std::span<float> sin_out);

}  // namespace llm2hef::sdk
