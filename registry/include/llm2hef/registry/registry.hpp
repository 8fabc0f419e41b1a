// Choosing the adapter for a checkpoint.
//
// Rules, in order:
//   1. --adapter NAME picks by adapter name; an unknown name is a UsageError
//      that lists the names available.
//   2. config.json "architectures" against each adapter's info().architectures.
//   3. config.json "model_type" against info().model_types, only when no
//      adapter claims any of the architectures.
// Two or more adapters claiming the match is an Unsupported error that names
// them and their files and asks for --adapter: the choice is never made
// silently (search order decides which *file* provides a name, not which
// adapter handles an architecture). No match is Unsupported too, listing what
// the config says and what the loaded adapters support.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
};

// Throws UsageError (unknown override), Unsupported (no match, ambiguous
// match) or BadInput (architectures / model_type of the wrong JSON type).
Resolution resolve(const sdk::JsonFile& config, const plugins::AdapterHost& host,
                   std::optional<std::string> adapter_override);

// An architecture claimed by more than one loaded adapter. Such a checkpoint
// only converts with --adapter; `llm2hef adapters` reports these up front.
struct ArchitectureConflict {
  std::string architecture;
  std::vector<const plugins::LoadedAdapter*> adapters;  // in discovery order
};

// Sorted by architecture name.
std::vector<ArchitectureConflict> architecture_conflicts(const plugins::AdapterHost& host);

}  // namespace llm2hef::registry
