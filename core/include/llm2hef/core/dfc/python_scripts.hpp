// The Python scripts export writes, as the source tree holds them
// (core/src/dfc/*.py.in, compiled in by CMake): real files, so that editors,
// ruff and duplicate-code scans see them. The text is a template: the parts
// export fills are marked "@NAME@" in valid Python (a quoted string, or a
// "# @NAME@ begin" ... "# @NAME@ end" block of stand-ins).
#pragma once

#include <string_view>

namespace llm2hef::core {

// compile.py: placeholders @RUNTIME_CONTRACT@ (a block) and "@DFC_MINIMUM_RAM@".
std::string_view compile_py_template();

// validate_on_device.py: placeholder @RUNTIME_CONTRACT@ (a block).
std::string_view validate_on_device_py_template();

}  // namespace llm2hef::core
