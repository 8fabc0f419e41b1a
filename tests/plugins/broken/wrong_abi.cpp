// A descriptor from a future llm2hef: only the stable prefix may be read.
#include "llm2hef/sdk/abi.hpp"

extern "C" LLM2HEF_EXPORT const llm2hef_adapter_entry_t* llm2hef_adapter_entry() {
  static const llm2hef_adapter_entry_t entry = {99u,     sizeof(llm2hef_adapter_entry_t), "wrong_abi",
                                                "1.0.0", LLM2HEF_BUILD_FINGERPRINT,       nullptr,
                                                nullptr};
  return &entry;
}
