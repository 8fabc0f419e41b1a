// libFuzzer target for the safetensors header parser: any input must either
// parse into entries that lie wholly inside the input, or be refused with
// BadInput. Anything else (another exception, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "llm2hef/core/checkpoint/safetensors.hpp"
#include "llm2hef/sdk/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llm2hef;
  core::SafetensorsHeader h;
  try {
    h = core::parse_safetensors_header({data, size}, size, "fuzz.safetensors");
  } catch (const BadInput&) {
    return 0;
  }
  uint64_t prev_end = h.data_start;
  for (const auto& e : h.entries) {
    if (e.begin < h.data_start || e.begin > e.end || e.end > size) __builtin_trap();
    if (e.end - e.begin != e.numel() * e.element_size) __builtin_trap();
    if (e.begin != e.end) {
      if (e.begin < prev_end) __builtin_trap();  // overlap slipped through
      prev_end = e.end;
    }
    // Convert what the reader would convert: ASan checks every byte read
    // lies inside the input.
    if (e.dtype != sdk::DType::other) {
      std::vector<float> out(e.numel());
      core::convert_to_f32(e.dtype, data + e.begin, out);
    }
  }
  return 0;
}
