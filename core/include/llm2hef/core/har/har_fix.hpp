// `llm2hef har fix`: runs the generic fixups (fixups.hpp) that apply to the
// HAR's stage, then the adapter's own hook, and writes the result.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/har/fixups.hpp"
#include "llm2hef/core/manifest/export_manifest.hpp"
#include "llm2hef/sdk/hn_fixup.hpp"

namespace llm2hef::sdk {
class Adapter;
}

namespace llm2hef::core::har {

struct FixOptions {
  std::filesystem::path input, output;
  bool dry_run = false;
  bool force = false;  // replace an existing output
  bool progress = false;
  std::optional<ExportManifest> manifest;  // absent without --manifest
  const sdk::Adapter* adapter = nullptr;   // its har_fixups hook runs last
  std::string adapter_name;
  std::string adapter_note;  // why no adapter hook runs, when adapter is null
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
