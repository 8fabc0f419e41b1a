// libFuzzer target for the HAR reader: the tar walk with its member checks,
// the HN and metadata parsers, the .npz reader and the fixup passes. Any
// input must either be refused with BadInput / Unsupported, or be read into
// a valid HN on which the fixups run, keep it valid, and change nothing on a
// second run. Anything else (another exception, a sanitizer report, a trap)
// is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "llm2hef/core/har/compile_lines.hpp"
#include "llm2hef/core/har/fixups.hpp"
#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/npz_stream.hpp"
#include "llm2hef/sdk/errors.hpp"

#include "fixups_twice.hpp"

using namespace llm2hef;
using namespace llm2hef::core::har;

namespace {

void fixups_twice(const HnModel& original, sdk::HarStage stage) { (void)fuzz::fixups_twice(original, stage); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  HarIndex idx;
  try {
    auto reader = TarReader::open_memory(data, size, "fuzz.har");
    idx = scan_har(*reader);
  } catch (const BadInput&) {
    return 0;
  } catch (const Unsupported&) {
    return 0;
  }
  fixups_twice(*idx.hn, sdk::HarStage::before_optimize);
  fixups_twice(*idx.hn, sdk::HarStage::after_optimize);
  try {
    compile_lines(*idx.hn);
  } catch (const BadInput&) {
  }
  if (!idx.weights_member.empty()) {
    try {
      auto reader = TarReader::open_memory(data, size, "fuzz.har");
      while (auto m = reader->next()) {
        if (m->name != idx.weights_member) continue;
        auto read = [&](void* b, size_t n) { return reader->read(b, n); };
        visit_npz(read, "fuzz.npz", [](const std::string&, const NpyInfo& info, const auto& pull) {
          if (info.element_size == 0) __builtin_trap();
          char buf[4096];
          while (pull(buf, sizeof buf) > 0) {
          }
        });
      }
    } catch (const BadInput&) {
    }
  }
  return 0;
}
