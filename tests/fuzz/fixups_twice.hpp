// Shared by the HAR and HN fuzz targets: the fixups of one stage on a copy of
// a parsed HN, then again on their own result, which must change nothing.
#pragma once

#include <optional>

#include "llm2hef/core/har/har_fix.hpp"
#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fuzz {

// The HN after one run of the fixups, or nullopt when they refused it (bad
// input or unsupported: a precise error, which is what we want). Traps when
// a second run on the result still changes something (not idempotent).
inline std::optional<llm2hef::core::har::HnModel> fixups_twice(const llm2hef::core::har::HnModel& original,
                                                               llm2hef::sdk::HarStage stage) {
  using namespace llm2hef::core::har;
  HnModel hn = original;
  WeightsEdit w;
  FixOptions o;
  try {
    run_fixups(hn, w, stage, "", o);
  } catch (const llm2hef::BadInput&) {
    return std::nullopt;
  } catch (const llm2hef::Unsupported&) {
    return std::nullopt;
  }
  WeightsEdit again;
  for (const auto& f : run_fixups(hn, again, stage, "", o))  // a valid result must be accepted again
    if (!f.changes.empty()) __builtin_trap();
  return hn;
}

}  // namespace fuzz
