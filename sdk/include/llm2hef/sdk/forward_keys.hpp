// config.json keys that change the forward pass, checked in one place.
//
// transformers' modeling code of the families llm2hef converts reads these
// keys (file named in the table, sdk/src/forward_keys.cpp); each changes
// what the model computes unless it holds its neutral value. An adapter names
// the keys it applies (or consumes knowingly) in its info
// (AdapterInfo::applied_keys); any other key of the table that is present
// with a non-neutral value is refused (UnappliedForwardKey, exit 4) naming
// the key and its value, and the host adds which of the adapters it found
// apply it. So an adapter forced onto another family's checkpoint
// (`--adapter llama` on a Gemma 2 folder) refuses instead of silently
// computing another function, and a family's own key the adapter does not
// implement is never dropped.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

struct ForwardKey {
  const char* key;
  const char* what;     // what a non-neutral value does ("attention logit soft-capping")
  const char* neutral;  // the value(s) that change nothing, as a user would write them
};

// The refusal of a key the adapter does not apply. The message names the key,
// its value and what it does; the adapters that do apply it are known only to
// the host, which catches this and adds them (core/src/export/model_plan.cpp).
class LLM2HEF_SDK_API UnappliedForwardKey : public Unsupported {
 public:
  UnappliedForwardKey(const std::string& message, std::string key) : Unsupported(message), key_(std::move(key)) {}
  ~UnappliedForwardKey() override;
  const std::string& key() const noexcept { return key_; }

 private:
  std::string key_;
};

// Every key of the table, in the order they are checked.
const std::vector<ForwardKey>& forward_keys();

// True when `key` (a table key) is present in `config` with a value that
// changes the forward pass. partial_rotary_factor is also looked for inside
// rope_parameters / rope_scaling (transformers 5 keeps it there).
bool changes_forward(const JsonFile& config, const std::string& key);

// Throws UnappliedForwardKey for the first table key not in `applied` that
// changes the forward pass, naming the key and its value; InternalError when
// `applied` names a key the table lacks (an adapter's typo must not switch
// the check off).
void refuse_unapplied_forward_keys(const JsonFile& config, const std::vector<std::string>& applied);

}  // namespace llm2hef::sdk
