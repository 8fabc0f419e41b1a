// The generic HN fixups of hailo-contract.md section 5, one pass each
// (core/src/har/fixups/<name>.cpp), and `llm2hef har fix`, which runs the
// ones that apply to the HAR's stage, then the adapter's own hook, and
// writes the result.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <optional>

#include <nlohmann/json.hpp>

#include "llm2hef/core/export_manifest.hpp"

#include "llm2hef/core/har/har_file.hpp"
#include "llm2hef/core/har/hn_model.hpp"
#include "llm2hef/core/har/npz_stream.hpp"

namespace llm2hef::sdk {
class Adapter;
}

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
};

// Before optimize (parsed HAR).
FixupResult rope_input_widening(FixupInput& in);
FixupResult mask_wiring(FixupInput& in);
FixupResult lm_head_split(FixupInput& in);
// After optimize (quantized HAR).
FixupResult conv_input_order(FixupInput& in);

struct FixOptions {
  std::filesystem::path input, output;
  bool dry_run = false;
  bool force = false;            // replace an existing output
  bool progress = false;
  std::optional<ExportManifest> manifest;  // absent without --manifest
  const sdk::Adapter* adapter = nullptr;  // its har_fixups hook runs last
  std::string adapter_name;
  std::string adapter_note;      // why no adapter hook runs, when adapter is null
};

struct FixReport {
  std::string input, output;
  std::string state;
  sdk::HarStage stage = sdk::HarStage::before_optimize;
  std::string stage_reason;
  std::string scopes_note;  // after optimize: the two network groups and the ignored base scope
  std::vector<FixupResult> fixups;
  std::vector<std::string> rewritten_members;  // members whose bytes change
  size_t change_count() const;
  bool written = false;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

FixReport fix_har(const FixOptions& options);

// The generic passes and the adapter hook on an already-scanned HAR (no I/O),
// shared by fix_har and the tests.
std::vector<FixupResult> run_fixups(HnModel& hn, WeightsEdit& weights, sdk::HarStage stage, const std::string& state,
                                    const FixOptions& options);

}  // namespace llm2hef::core::har
