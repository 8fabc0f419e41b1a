// The content of `llm2hef adapters [--json] [--verbose]`.
//
// adapters_report() builds one JSON document; --json prints it as is, and the
// text form is rendered from the same document so the two never disagree:
//
//   {"adapters":   [{"name", "version", "description", "architectures",
//                    "model_types", "file",
//                    "options": [{"name", "choices", "default", "help"}],
//                    "applied_keys": [forward keys, sdk/forward_keys.hpp]}],
//    "conflicts":  [{"architecture", "adapters": [names], "chosen": name}],
//    // only with verbose:
//    "roots":      [{"path", "kind", "state", "note"}],
//    "considered": [{"file", "root", "root_kind", "status": "loaded"|"skipped",
//                    "reason", "error"}]}
//
// "error" is a PluginLoadError reason token ("not_elf", ...) for broken files
// and null for loaded files and duplicates.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/host.hpp"

namespace llm2hef::registry {

nlohmann::json adapters_report(const plugins::AdapterHost& host, bool verbose);

// Human-readable rendering of adapters_report()'s document (ends in a newline).
std::string adapters_text(const nlohmann::json& report);

}  // namespace llm2hef::registry
