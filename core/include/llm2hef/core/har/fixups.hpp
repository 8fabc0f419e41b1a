// The generic HN fixups of hailo-contract.md section 5, one pass each
// (core/src/har/fixups/<name>.cpp); har_fix.hpp runs them.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/core/manifest/export_manifest.hpp"

#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/har/npz_stream.hpp"

namespace llm2hef::core::har {

// What a pass sees and may change.
struct FixupInput {
  HnModel& hn;
  WeightsEdit& weights;
  const ExportManifest* manifest;  // nullptr without --manifest
};

struct FixupResult {
  std::string name;                  // "rope-input-widening", ...
  bool ran = false;                  // false: skipped for this stage
  std::string note;                  // why skipped, or what was looked at when nothing changed
  std::vector<std::string> changes;  // one line per change
  // What a pass could not confirm and went ahead with anyway ("warning:"
  // lines of the text report, `warnings` in --json).
  std::vector<std::string> warnings;
};

// Before optimize (parsed HAR).
// A check, not an edit: each pe input's role in the manifest against the
// HN's structure; refuses (BadInput) when they disagree.
FixupResult pe_input_roles(FixupInput& in);
FixupResult rope_input_widening(FixupInput& in);
FixupResult mask_wiring(FixupInput& in);
FixupResult lm_head_split(FixupInput& in);
// After optimize (quantized HAR).
FixupResult conv_input_order(FixupInput& in);

}  // namespace llm2hef::core::har
