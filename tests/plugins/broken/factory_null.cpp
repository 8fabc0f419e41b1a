// create() returns null instead of an adapter.
#include "llm2hef/sdk/abi.hpp"

namespace {
llm2hef::sdk::Adapter* create() { return nullptr; }
void destroy(llm2hef::sdk::Adapter*) {}
}  // namespace

extern "C" LLM2HEF_EXPORT const llm2hef_adapter_entry_t* llm2hef_adapter_entry() {
  static const llm2hef_adapter_entry_t entry = {LLM2HEF_ADAPTER_ABI_VERSION,
                                                sizeof(llm2hef_adapter_entry_t),
                                                "factory_null",
                                                "1.0.0",
                                                LLM2HEF_BUILD_FINGERPRINT,
                                                &create,
                                                &destroy};
  return &entry;
}
