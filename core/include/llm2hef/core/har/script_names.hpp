// HN layer names as `llm2hef har lines` writes them into model-script lines.
//
// A model script (.alls) has no quoting: a name is written as it is, so a
// ',', ']', ')', '=', a space or a line break in a name read from a HAR would
// end it and start other model-script syntax (another quantization_param,
// another network_group). Every name a `har lines` line holds therefore goes
// through script_name(), and a name outside the set the DFC itself writes is
// refused instead of escaped (there is nothing to escape it with).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/core/har/hn_model.hpp"

namespace llm2hef::core::har {

// The names the DFC gives layers and scopes: one or more parts joined by '/',
// each part non-empty ASCII letters, digits and '_' (`tiny/conv12`,
// `qwen__prefill/block3__conv2`, `tiny__tbt/cache_input_layer1`; network
// names are [a-z0-9_], hailo-contract.md section 4).
bool is_script_name(std::string_view name);

// `name` when is_script_name(name); else BadInput naming the HN (the HAR and
// its member, hn.label()) and the name, escaped for the terminal.
std::string script_name(const HnModel& hn, const std::string& name);

// "[a, b, c]": each name through script_name().
std::string script_name_list(const HnModel& hn, const std::vector<std::string>& names);

}  // namespace llm2hef::core::har
