// What the Hailo genai runtime feeds a graph and how it computes it
// (hailo-contract.md sections 2 and 9). The one definition of the six runtime
// inputs: the graph builder, the host-input emulator, hailo-config, the
// manifest, the model scripts, the DFC driver and the HEF checker all read
// this table instead of spelling a name, a role, a shape or a layer suffix.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace llm2hef::sdk {

// What the server uses when hailo-config's pre_process_params leaves a value
// out (llm_server.cpp parse_config_json; hailo-contract.md section 6,
// "pre_process_params"). 2048 is also the context of Hailo's own Hailo-10H
// models (section 11), and Hailo's recipe quantizes with a 96-token prefill
// at cache 2048 (section 7). The decoder adapter caps its default --cache at the first.
inline constexpr int64_t kRuntimeDefaultCacheSize = 2048;     // kv_cache_size
inline constexpr int64_t kRuntimeDefaultAttentionHeads = 12;  // num_attention_heads
inline constexpr int64_t kRuntimeDefaultKeyValueHeads = 2;    // num_key_value_heads
inline constexpr int64_t kRuntimeDefaultPrefillTokens = 96;   // prefill_input_tokens_count

// Additive mask values as the DFC calibration and LNM's recipe use them
// (the runtime quantizes them to uint8 itself): 0 = may attend, -100 = blocked.
inline constexpr float kMaskAllowed = 0.0f;
inline constexpr float kMaskBlocked = -100.0f;

// The role of each input; the enum's order is the table's order.
enum class InputRole { embeddings, attention_mask, pe_q_cos, pe_q_sin, pe_k_cos, pe_k_sin };

// The graph-side shape of an input (N = cache size = SEQ, T = theta length).
enum class InputShape {
  embeddings,  // [1, N, hidden]
  mask,        // [1, 1, N, heads * N], head-major columns
  pe_table,    // [1, N, T]; the runtime writes it tiled (see PeTiling)
};

// How many times the runtime tiles a pe table across its columns
// (hailo-config num_attention_heads / num_key_value_heads, section 9).
enum class PeTiling { none, q_heads, k_heads };

struct RuntimeInput {
  InputRole id;
  std::string_view role;       // key of hailo-config input_layers_names_suffixes (section 9)
  std::string_view name;       // ONNX input name
  std::string_view dfc_layer;  // the DFC's name for it: input_layerN in ONNX input order (section 2)
  InputShape shape;
  std::span<const std::string_view> dfc_format;  // translate_onnx_model net_input_format (section 3)
  PeTiling tiling;
  bool cosine;  // pe tables: cos (true) or sin (false); unused otherwise
};

inline constexpr std::array<std::string_view, 3> kFormatRows = {"BATCH", "WIDTH", "CHANNELS"};
inline constexpr std::array<std::string_view, 4> kFormatMask = {"BATCH", "HEIGHT", "WIDTH", "CHANNELS"};

// ONNX input order = the DFC's input_layer1..6 numbering = the runtime's
// default suffixes (llm_server.hpp / llm_server.cpp parse_config_json,
// section 9). hailo-config still spells every suffix out.
inline constexpr std::array<RuntimeInput, 6> kRuntimeInputs = {{
    {InputRole::embeddings, "embeddings", "inputs_embeds", "input_layer1", InputShape::embeddings, kFormatRows,
     PeTiling::none, false},
    {InputRole::attention_mask, "attention_mask", "attention_mask", "input_layer2", InputShape::mask, kFormatMask,
     PeTiling::none, false},
    {InputRole::pe_q_cos, "pe_q_cos", "pe_q_cos", "input_layer3", InputShape::pe_table, kFormatRows, PeTiling::q_heads,
     true},
    {InputRole::pe_q_sin, "pe_q_sin", "pe_q_sin", "input_layer4", InputShape::pe_table, kFormatRows, PeTiling::q_heads,
     false},
    {InputRole::pe_k_cos, "pe_k_cos", "pe_k_cos", "input_layer5", InputShape::pe_table, kFormatRows, PeTiling::k_heads,
     true},
    {InputRole::pe_k_sin, "pe_k_sin", "pe_k_sin", "input_layer6", InputShape::pe_table, kFormatRows, PeTiling::k_heads,
     false},
}};

// The table's entry for a role.
constexpr const RuntimeInput& runtime_input(InputRole id) { return kRuntimeInputs[static_cast<size_t>(id)]; }

// The entry whose hailo-config role key is `role`, or nullptr.
const RuntimeInput* find_runtime_input(std::string_view role);

// The numbers an input's shape depends on.
struct RuntimeSizes {
  int64_t cache = 0;  // N
  int64_t hidden = 0;
  int64_t heads = 0;                 // attention heads: the mask's tiling
  int64_t theta = 0;                 // T
  int64_t q_tiles = 0, k_tiles = 0;  // the runtime's pe tiling
};

struct Plan;
// The sizes of a plan (sdk/adapter.hpp).
RuntimeSizes runtime_sizes(const Plan& plan);

// The shape the exported graph declares for the input.
std::vector<int64_t> graph_shape(const RuntimeInput& input, const RuntimeSizes& sizes);

// The shape the runtime feeds the compiled HEF: pe tables tiled q/k times
// (the HAR fixup widens the input layers to this), others as in the graph.
std::vector<int64_t> device_shape(const RuntimeInput& input, const RuntimeSizes& sizes);

// cos/sin(theta[l] * position) exactly as the runtime computes them: the
// product rounded to float32, then float32 cos and sin.
void runtime_pe_row(std::span<const float> theta, int64_t position, std::span<float> cos_out, std::span<float> sin_out);

}  // namespace llm2hef::sdk
