// The --gelu option of the adapters whose checkpoints use gelu_new (GPT-2,
// Phi): "sigmoid" (x*sigmoid(1.702x), the parsable approximation, default)
// or "tanh" (gelu_new exactly); the form it chose, and the rewrite line that
// says so. Header-only.
#pragma once

#include <string>

#include "llm2hef/families/families.hpp"
#include "llm2hef/sdk/adapter.hpp"
#include "llm2hef/sdk/blocks.hpp"

namespace llm2hef::families {

inline OptionSpec gelu_new_option() {
  return {"gelu",
          {"sigmoid", "tanh"},
          "sigmoid",
          "GELU form: sigmoid = x*sigmoid(1.702x) (parsable approximation), tanh = gelu_new exactly"};
}
inline GeluForm gelu_new_form(const std::string& option) {
  return option == "tanh" ? GeluForm::tanh : GeluForm::sigmoid;
}
inline const char* gelu_new_rewrite(GeluForm form) {
  return form == GeluForm::tanh ? "GELU as gelu_new (tanh form, exact)"
                                : "GELU as x*sigmoid(1.702x) (approximation; --gelu tanh for exact)";
}

}  // namespace llm2hef::families
