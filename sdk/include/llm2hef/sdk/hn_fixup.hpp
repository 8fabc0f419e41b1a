// What an adapter's HAR-fixup hook sees: the HN of one HAR, the stage the
// HAR is in, the export manifest when the user passed one, and a place to
// report every change.
//
// Kept deliberately small, because it is part of the plugin ABI: only the
// HN (a JSON document) is editable. Weights are not exposed: an adapter
// fixup that needs to change weights must say so in its design first, and
// the core must grow a reviewed interface for it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::sdk {

// Where in the DFC flow the HAR being fixed sits (hailo-contract.md section 1).
enum class HarStage {
  before_optimize,  // parsed HAR: HN surgery (RoPE widening, mask wiring, lm_head split)
  after_optimize,   // quantized HAR: conv input-order repair
};

class LLM2HEF_SDK_API HnFixupContext {
 public:
  virtual ~HnFixupContext();

  virtual HarStage stage() const = 0;
  // The HAR metadata's `state` string ("" when the HAR has none).
  virtual std::string state() const = 0;

  // The main HN, layer order preserved. Edit it in place; the core checks
  // it is still a well-formed HN afterwards (every name in `input`/`output`
  // a layer, shapes present) and refuses the result otherwise.
  virtual nlohmann::ordered_json& hn() = 0;

  // The manifest.json written by `llm2hef export` (null when not given).
  virtual const nlohmann::json& manifest() const = 0;

  // One line per change, shown to the user and in --json. A fixup that
  // changes the HN without reporting it is reported by the core as
  // "<adapter>: unreported HN change". Running twice must change nothing
  // the second time.
  virtual void report(const std::string& change) = 0;
};

}  // namespace llm2hef::sdk
