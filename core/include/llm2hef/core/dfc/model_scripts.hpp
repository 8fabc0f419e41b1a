// The model scripts the DFC runs for optimize and compile
// (hailo-contract.md sections 7-8), and the network name they use.
#pragma once

#include <cstdint>
#include <string>

#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::core {

// A DFC network name: lowercase, [a-z0-9_], starting with a letter.
std::string dfc_scope_name(const std::string& model_name);

std::string optimize_script(const std::string& scope, const sdk::Plan& plan, int64_t calib_size);
std::string compile_script(const std::string& scope);

}  // namespace llm2hef::core
