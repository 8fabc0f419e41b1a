// libFuzzer target for the HEF reader: any input must either parse into a
// HefInfo whose resources lie inside the input, or be refused with BadInput.
// Anything else (another exception, a sanitizer report) is a bug. The
// contract check runs on what parses, so its resource reads are fuzzed too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "llm2hef/core/hef/hef_contract.hpp"
#include "llm2hef/core/hef/hef_file.hpp"
#include "llm2hef/sdk/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llm2hef;
  const auto src = core::hef::memory_source(std::string(reinterpret_cast<const char*>(data), size), "fuzz.hef");
  try {
    const core::hef::HefInfo info = core::hef::read_hef(*src);
    for (const auto& r : info.resources)
      if (r.file_offset < info.header.zero_point() || r.file_offset + r.size > size) __builtin_trap();
    core::hef::verify_checksums(*src, info, UINT64_MAX, true);
    core::hef::check_hef_contract(*src, info, {});
  } catch (const BadInput&) {
  }
  return 0;
}
