// What an adapter library says it is, read in a throw-away child process, so
// that a library downloaded from an index is never loaded into llm2hef itself
// before it is installed: the child runs the host's checked loader
// (plugins::load_adapter: dlopen, ABI version, build fingerprint, create(),
// info()) and sends the result back over a pipe as JSON.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace llm2hef::registry {

struct ProbedClaims {
  // Set when the library loaded: what info() reported.
  bool loaded = false;
  std::string name, version;
  std::vector<std::string> architectures, model_types;
  // Otherwise why not: the loader's refusal, or how the child ended.
  std::string error;
};

// Never throws for problems of the library; InternalError when the child
// cannot be started.
ProbedClaims probe_claims(const std::filesystem::path& library,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace llm2hef::registry
