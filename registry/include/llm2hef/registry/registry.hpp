// Choosing the adapter for a checkpoint.
//
// Rules, in order:
//   1. --adapter NAME picks by adapter name; an unknown name is a UsageError
//      that lists the names available.
//   2. config.json "architectures" against each adapter's info().architectures.
//   3. config.json "model_type" against info().model_types, only when no
//      adapter claims any of the architectures.
// When more than one adapter matches at step 2 (or 3), the winner is decided
// by a fixed, documented rule (docs/writing-an-adapter.md, "When two adapters
// claim one architecture"):
//   a. the architecture listed first in config.json that any adapter claims;
//   b. among its claimants, the adapter found first in the search order
//      (--adapter-path, LLM2HEF_ADAPTER_PATH, install, build tree; file-name
//      order inside a folder) — the precedence that already decides which
//      file provides an adapter name, so a development build passed with
//      --adapter-path wins over an installed one.
// The choice is never silent: Resolution::warning names the adapter chosen,
// every adapter passed over and --adapter NAME; callers print it and record
// it. No match is Unsupported, listing what the config says and what the
// loaded adapters support.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::registry {

enum class MatchKind { override_name, architecture, model_type };

// "--adapter", "architectures", "model_type".
const char* to_string(MatchKind kind);

struct Resolution {
  const plugins::LoadedAdapter* adapter = nullptr;  // owned by the AdapterHost
  MatchKind how = MatchKind::architecture;
  std::string matched;  // the adapter name, architecture or model_type value that matched
  // Other adapters that also matched, in search order; empty when the match
  // was unique or chosen with --adapter.
  std::vector<const plugins::LoadedAdapter*> passed_over;
  // Set exactly when passed_over is not empty: who won, who lost, and why.
  std::string warning;
};

// The resolution as recorded in manifest.json and printed by inspect:
// {"name", "version", "file", "matched_by", "matched",
//  "passed_over": [{"name", "file"}], "warning" (only when passed_over)}.
nlohmann::json resolution_json(const Resolution& resolution);

// Throws UsageError (unknown override), Unsupported (no match) or BadInput
// (architectures / model_type of the wrong JSON type).
Resolution resolve(const sdk::JsonFile& config, const plugins::AdapterHost& host,
                   std::optional<std::string> adapter_override);

// An architecture claimed by more than one loaded adapter; the first one
// listed wins unless --adapter says otherwise. `llm2hef adapters` reports
// these up front.
struct ArchitectureConflict {
  std::string architecture;
  std::vector<const plugins::LoadedAdapter*> adapters;  // in discovery order: adapters[0] wins
};

// Sorted by architecture name.
std::vector<ArchitectureConflict> architecture_conflicts(const plugins::AdapterHost& host);

}  // namespace llm2hef::registry
