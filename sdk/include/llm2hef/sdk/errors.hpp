// Error kinds shared by the host, the core and adapters.
//
// Each kind maps to one process exit status so that scripts can tell a typo in
// the command line from a broken checkpoint or an architecture we refuse.
#pragma once

#include <stdexcept>
#include <string>

// Exported from the SDK library even when an adapter builds with hidden
// visibility: the vtables and type_info of these classes live in
// libllm2hef_sdk.so (key functions below), so an exception thrown by an
// adapter stays valid after the adapter library is unloaded, and the host's
// catch clauses match it.
#define LLM2HEF_SDK_API __attribute__((visibility("default")))

namespace llm2hef {

enum class ExitCode : int {
  ok = 0,
  failure = 1,      // a check ran and found problems (e.g. lint findings)
  usage = 2,        // bad command line
  bad_input = 3,    // malformed or inconsistent input files
  unsupported = 4,  // valid input that llm2hef refuses to convert
  internal = 5,     // a bug in llm2hef or an adapter
};

class LLM2HEF_SDK_API Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ~Error() override;
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

struct LLM2HEF_SDK_API UsageError : Error {
  explicit UsageError(const std::string& m) : Error(ExitCode::usage, m) {}
  ~UsageError() override;
};
struct LLM2HEF_SDK_API BadInput : Error {
  explicit BadInput(const std::string& m) : Error(ExitCode::bad_input, m) {}
  ~BadInput() override;
};
struct LLM2HEF_SDK_API Unsupported : Error {
  explicit Unsupported(const std::string& m) : Error(ExitCode::unsupported, m) {}
  ~Unsupported() override;
};
struct LLM2HEF_SDK_API InternalError : Error {
  explicit InternalError(const std::string& m) : Error(ExitCode::internal, m) {}
  ~InternalError() override;
};

}  // namespace llm2hef
