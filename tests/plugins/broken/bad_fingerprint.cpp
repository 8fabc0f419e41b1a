// Right ABI version, but built against another runtime: the host must refuse
// before calling create().
#include <cstdlib>

#include "llm2hef/sdk/abi.hpp"

namespace {
llm2hef::sdk::Adapter* must_not_be_called() { std::abort(); }
void destroy(llm2hef::sdk::Adapter*) {}
}  // namespace

extern "C" LLM2HEF_EXPORT const llm2hef_adapter_entry_t* llm2hef_adapter_entry() {
  static const llm2hef_adapter_entry_t entry = {LLM2HEF_ADAPTER_ABI_VERSION,
                                                sizeof(llm2hef_adapter_entry_t),
                                                "bad_fingerprint",
                                                "1.0.0",
                                                "gcc-1;cxx11abi-0;sdk-0.0.0",
                                                &must_not_be_called,
                                                &destroy};
  return &entry;
}
