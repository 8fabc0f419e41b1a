// Making hailo-config.json, the runtime's settings resource (hailo-contract.md
// section 6), from the checkpoint and the plan. The document's type and keys
// are runtime/hailo_config.hpp's; this is the export's side that fills them.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm2hef/core/export/tokenizer_resource.hpp"
#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/checkpoint.hpp"

namespace llm2hef::core {

// Every key the runtime reads, filled from the checkpoint and the plan, then
// the adapter's overrides.
// `chat_template`: the template found (chosen_chat_template), made fit for
// hailort by chat_template_for_runtime.
nlohmann::json make_hailo_config(const sdk::Checkpoint& ckpt, const sdk::Plan& plan, const TokenizerFix& tok,
                                 const ChatTemplate& chat_template, std::vector<std::string>& changes);
// The same with the checkpoint's own template.
nlohmann::json make_hailo_config(const sdk::Checkpoint& ckpt, const sdk::Plan& plan, const TokenizerFix& tok,
                                 std::vector<std::string>& changes);

}  // namespace llm2hef::core
