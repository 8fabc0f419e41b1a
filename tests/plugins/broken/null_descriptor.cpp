// The entry symbol exists but hands back nothing.
#include "llm2hef/sdk/abi.hpp"

extern "C" LLM2HEF_EXPORT const llm2hef_adapter_entry_t* llm2hef_adapter_entry() { return nullptr; }
