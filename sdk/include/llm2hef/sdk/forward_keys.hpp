// config.json keys that change the forward pass, checked in one place.
//
// transformers' modeling code of the families llm2hef converts reads these
// keys (file named in the table, sdk/src/forward_keys.cpp); each changes
// what the model computes unless it holds its neutral value. An adapter's
// reading names the keys it applies (or consumes knowingly); any other key of
// the table that is present with a non-neutral value is refused (Unsupported,
// exit 4) naming the key, its value and the adapters that apply it. So an
// adapter forced onto another family's checkpoint (`--adapter llama` on a
// Gemma 2 folder) refuses instead of silently computing another function,
// and a family's own key the adapter does not implement is never dropped.
#pragma once

#include <string>
#include <vector>

#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

struct ForwardKey {
  const char* key;
  const char* what;        // what a non-neutral value does ("attention logit soft-capping")
  const char* neutral;     // the value(s) that change nothing, as a user would write them
  const char* applied_by;  // first-party adapters that apply it ("gemma2, gemma3"), or "none"
};

// Every key of the table, in the order they are checked.
const std::vector<ForwardKey>& forward_keys();

// True when `key` (a table key) is present in `config` with a value that
// changes the forward pass. partial_rotary_factor is also looked for inside
// rope_parameters / rope_scaling (transformers 5 keeps it there).
bool changes_forward(const JsonFile& config, const std::string& key);

// Throws Unsupported for the first table key not in `applied` that changes
// the forward pass, naming the key, its value and the adapters that apply
// it; InternalError when `applied` names a key the table lacks (an adapter's
// typo must not switch the check off).
void refuse_unapplied_forward_keys(const JsonFile& config, const std::vector<std::string>& applied);

// The keys each family's reading applies, for the first-party adapters and
// anyone building on the same SDK readings.
std::vector<std::string> llama_family_applied_keys();  // + no_rope_* (smollm3), multipliers (granite)
std::vector<std::string> gemma_family_applied_keys();

}  // namespace llm2hef::sdk
