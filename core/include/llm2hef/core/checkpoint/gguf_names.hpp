// GGUF tensor names back to Hugging Face names, per architecture.
//
// Each architecture's rules are its row's (core/src/checkpoint/gguf/<family>.cpp,
// family.hpp): the inverse of llama.cpp's gguf-py tensor_mapping.py for the
// HF module names of the family (docs/gguf.md lists them), with what
// llama.cpp's converter (convert_hf_to_gguf.py / conversion/*.py) did to the
// data on the way, which the reader undoes by the transforms below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core {

enum class GgufTransform {
  none,
  rope_unpermute,  // rows: undo LlamaModel.permute (heads from the tensor's role: q or k)
  neox_qkv,        // rows: [all q; all k; all v] back to per-head [q k v]
  transpose,       // 2-D: stored [out, in] back to Conv1D's [in, out]
  minus_one,       // values: stored 1 + w back to w
  unsqueeze_1,     // shape: [hidden, L] back to [hidden, 1, L]
  split_heads,     // one stored [heads, dim] tensor to `heads` HF tensors of [dim]
  split_qkv,       // one stored [q; k; v] tensor (rows) to the HF q, k and v tensors ("{QKV}" in the name)
};

struct GgufArch {
  std::string gguf;             // general.architecture
  std::string hf_architecture;  // config.json "architectures"
  std::string model_type;       // config.json "model_type"
};

// The architectures with a row, for messages: "gemma2, gemma3, ...".
std::string gguf_supported_archs();
// The row's architecture; nullptr when `arch` has no row.
const GgufArch* find_gguf_arch(std::string_view arch);

struct GgufNameMatch {
  std::string hf_name;  // split_heads: "{H}" where the head index goes; split_qkv: "{QKV}" for q, k or v
  GgufTransform transform = GgufTransform::none;
  bool is_q = false;   // rope_unpermute: q (head_count) or k (head_count_kv)
  int64_t block = -1;  // N of a blk.N. tensor; -1 for the others
};

// The HF name and transform of GGUF tensor `name` under `arch`; nullopt when
// its row has no such tensor.
std::optional<GgufNameMatch> map_gguf_tensor(const GgufArch& arch, std::string_view name);

// GGUF tensors that carry hyper-parameters rather than weights, read by the
// config builder and not exposed as tensors (llama's rope_freqs, phi3's
// rope_factors_long / _short).
bool is_gguf_config_tensor(std::string_view name);

}  // namespace llm2hef::core
