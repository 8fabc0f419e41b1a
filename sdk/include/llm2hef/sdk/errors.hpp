// Error kinds shared by the host, the core and adapters.
//
// Each kind maps to one process exit status so that scripts can tell a typo in
// the command line from a broken checkpoint or an architecture we refuse.
#pragma once

#include <stdexcept>
#include <string>

namespace llm2hef {

enum class ExitCode : int {
  ok = 0,
  failure = 1,      // a check ran and found problems (e.g. lint findings)
  usage = 2,        // bad command line
  bad_input = 3,    // malformed or inconsistent input files
  unsupported = 4,  // valid input that llm2hef refuses to convert
  internal = 5,     // a bug in llm2hef or an adapter
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

struct UsageError : Error {
  explicit UsageError(const std::string& m) : Error(ExitCode::usage, m) {}
};
struct BadInput : Error {
  explicit BadInput(const std::string& m) : Error(ExitCode::bad_input, m) {}
};
struct Unsupported : Error {
  explicit Unsupported(const std::string& m) : Error(ExitCode::unsupported, m) {}
};
struct InternalError : Error {
  explicit InternalError(const std::string& m) : Error(ExitCode::internal, m) {}
};

}  // namespace llm2hef
