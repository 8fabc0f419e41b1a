// libFuzzer target for the HN reader alone (no tar around it, so every
// mutation lands in the JSON): HnModel::parse with its validation, then the
// fixup passes of both stages and the compile lines on the parsed HN, in
// memory. Any input must either be refused with BadInput / Unsupported, or be
// read into a valid HN on which the fixups run, keep it valid, and change
// nothing on a second run. Anything else (another exception, a sanitizer
// report, a trap) is a bug.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "llm2hef/core/har/compile_lines.hpp"
#include "llm2hef/core/har/fixups.hpp"
#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/sdk/errors.hpp"

#include "fixups_twice.hpp"

using namespace llm2hef;
using namespace llm2hef::core::har;

namespace {

void fixups_twice(const HnModel& original, sdk::HarStage stage) {
  const std::optional<HnModel> hn = fuzz::fixups_twice(original, stage);
  if (!hn) return;
  hn->validate();                                    // the result must still be a usable HN
  (void)HnModel::parse(hn->dump(), "rewritten.hn");  // what would be written reads back
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<HnModel> hn;
  try {
    hn.emplace(HnModel::parse({reinterpret_cast<const char*>(data), size}, "fuzz.hn"));
  } catch (const BadInput&) {
    return 0;
  } catch (const Unsupported&) {
    return 0;
  }
  fixups_twice(*hn, sdk::HarStage::before_optimize);
  fixups_twice(*hn, sdk::HarStage::after_optimize);
  try {
    compile_lines(*hn);
  } catch (const BadInput&) {
  }
  return 0;
}
