#include "llm2hef/sdk/hn_fixup.hpp"

namespace llm2hef::sdk {

// Key function: the vtable and type_info live in libllm2hef_sdk.so, shared
// by the host and every adapter.
HnFixupContext::~HnFixupContext() = default;

}  // namespace llm2hef::sdk
