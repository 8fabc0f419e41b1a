// Loading an adapter once in a throw-away child process before the host loads
// it, so that a library that ends its process while loading (a constructor or
// factory that calls exit() or abort(), a crash) is reported and skipped
// instead of taking llm2hef down with it (docs/plugin-abi.md, "Isolation").
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

namespace llm2hef::plugins {

// Forks a child that runs load_adapter(path) (dlopen with RTLD_NOW, every ABI
// check, create(), info(), destroy(), dlclose) and reports back over a pipe.
// Returns empty when the child got to the end, whatever load_adapter() decided
// (a file it rejects is rejected again, with its message, by the host's own
// load); otherwise why the child did not: "the library killed its process
// while loading (signal 6, Aborted)", "... (exit status 0)", or that it did not
// finish within `timeout` (the child is then killed). Never throws.
std::string probe_in_child(const std::filesystem::path& path,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace llm2hef::plugins
