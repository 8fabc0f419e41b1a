// libFuzzer target for the GGUF header parser and the dequantizers: any input
// must either parse into tensors that lie wholly inside the input, are
// aligned and do not overlap, or be refused with BadInput. Every tensor of a
// type llm2hef reads is then dequantized from the input's bytes (ASan checks
// each read), and the config builder runs on the metadata for each known
// architecture. Anything else (another exception, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "llm2hef/core/checkpoint/gguf_config.hpp"
#include "llm2hef/core/checkpoint/gguf_dequant.hpp"
#include "llm2hef/core/checkpoint/gguf_file.hpp"
#include "llm2hef/core/checkpoint/gguf_names.hpp"
#include "llm2hef/sdk/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llm2hef;
  core::GgufHeader h;
  try {
    h = core::parse_gguf_header({data, size}, size, "fuzz.gguf");
  } catch (const BadInput&) {
    return 0;
  }
  for (const auto& t : h.tensors) {
    if (t.begin < h.data_start || t.begin > t.end || t.end > size || t.offset % h.alignment != 0) __builtin_trap();
    if (t.end - t.begin != t.numel() / t.type->block_size * t.type->type_size) __builtin_trap();
    if (t.type->dequantized && t.numel() <= (1u << 20)) {
      std::vector<float> out(t.numel());
      core::dequantize_blocks(*t.type, data + t.begin, t.numel() / t.type->block_size, out.data());
    }
  }
  // The metadata through the config builder (type and range checks).
  const core::GgufMetadata meta(h.metadata, "fuzz.gguf");
  const auto find = [&](std::string_view n) -> const core::GgufTensorInfo* {
    for (const auto& t : h.tensors)
      if (t.name == n) return &t;
    return nullptr;
  };
  const auto read = [&](std::string_view n) {
    const core::GgufTensorInfo* t = find(n);
    std::vector<float> v(t && t->type->dequantized && t->numel() <= (1u << 16) ? t->numel() : 0);
    if (!v.empty()) core::dequantize_blocks(*t->type, data + t->begin, v.size() / t->type->block_size, v.data());
    return v;
  };
  // general.architecture may hold another type than a string: find_string
  // refuses that with BadInput, which is the answer export gives too.
  std::optional<std::string> arch;
  try {
    arch = meta.find_string("general.architecture");
  } catch (const BadInput&) {
    return 0;
  }
  if (!arch) return 0;
  if (const core::GgufArch* a = core::find_gguf_arch(*arch)) {
    try {
      (void)core::gguf_config(meta, *a, {find, read});
    } catch (const BadInput&) {
    } catch (const Unsupported&) {
    }
    for (const auto& t : h.tensors) (void)core::map_gguf_tensor(*a, t.name);
  }
  return 0;
}
