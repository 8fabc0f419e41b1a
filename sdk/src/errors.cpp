// Key functions: anchor the error classes' vtables and type_info in the SDK
// library (see errors.hpp).
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef {

Error::~Error() = default;
UsageError::~UsageError() = default;
BadInput::~BadInput() = default;
Unsupported::~Unsupported() = default;
InternalError::~InternalError() = default;

}  // namespace llm2hef
