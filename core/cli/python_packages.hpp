// The Python interpreter a command runs (calibrate.py, the tokenizer of
// `inputs --text`) and the packages it needs, checked before anything runs.
// What is missing is named, alone, with the install command that works for
// that interpreter: into a new virtual environment when it is externally
// managed (PEP 668: pip refuses to install into it), else its own pip.
// A missing interpreter or package is bad input, exit 3, as for
// validate_on_device.py's missing hailo_platform (docs/on-device-check.md).
#pragma once

#include <string>
#include <vector>

namespace llm2hef::cli {

// Throws BadInput unless `python` starts and can import every module of
// `modules` (pip names equal the module names for all of them). `purpose`
// says what runs, e.g. "calibrate runs the export's calibrate.py".
void require_python_modules(const std::string& python, const std::vector<std::string>& modules,
                            const std::string& purpose);

}  // namespace llm2hef::cli
