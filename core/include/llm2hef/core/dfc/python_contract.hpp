// The runtime contract (sdk/runtime_contract.hpp) as Python constants, for
// the scripts export writes (compile.py, validate_on_device.py): they name
// the runtime inputs' roles through these, never by spelling them.
#pragma once

#include <string>

namespace llm2hef::core {

// Python source: ROLES (the six roles in table order), one constant per role
// named after it in capitals, PE_TILING (pe role -> "q" or "k": which heads
// the runtime tiles the table by) and PE_COSINE (pe role -> True for cos).
std::string python_runtime_contract();

// `script` with its "# @RUNTIME_CONTRACT@ begin" ... "# @RUNTIME_CONTRACT@ end"
// block of stand-ins replaced by the above.
std::string with_python_runtime_contract(std::string script);

}  // namespace llm2hef::core
