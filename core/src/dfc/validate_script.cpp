// validate_on_device.py, written by `llm2hef export` next to compile.py. The
// script runs on the host of the Hailo-10H: (a) generation through HailoRT's
// genai.LLM, (b) the __prefill / __tbt groups through the InferModel API on
// the inputs the genai server builds, compared per position with model.onnx
// in fp32. Every HailoRT name it uses is from hailo-ai/hailort v5.2.0's Python
// bindings (pyhailort.py); docs/on-device-check.md says which and why.
#include "llm2hef/core/dfc/validate_script.hpp"

#include "llm2hef/core/dfc/compile_driver.hpp"
#include "llm2hef/core/dfc/python_contract.hpp"
#include "llm2hef/core/dfc/python_scripts.hpp"

namespace llm2hef::core {

std::string validate_script(const ExportManifest& manifest) {
  return generated_script_header(manifest) + "\n" +
         with_python_runtime_contract(std::string(validate_on_device_py_template()));
}

}  // namespace llm2hef::core
