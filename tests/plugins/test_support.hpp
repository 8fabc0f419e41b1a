// Paths of the test adapters (from CMake) and small helpers shared by the
// plugin tests.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include "../unit/temp_dir.hpp"
#include "llm2hef/plugins/host.hpp"

namespace llm2hef_test {

namespace fs = std::filesystem;

inline const fs::path adapter_dir{LLM2HEF_TEST_ADAPTER_DIR};
inline const fs::path adapter_dir_v2{LLM2HEF_TEST_ADAPTER_DIR_V2};

using llm2hef::testing::TempDir;

// What discovery recorded for `file` (loaded, or skipped and why).
inline const llm2hef::plugins::Considered& record_for(const llm2hef::plugins::AdapterHost& host, const fs::path& file) {
  for (const auto& c : host.considered())
    if (c.file == file) return c;
  throw std::runtime_error("no record for " + file.string());
}

}  // namespace llm2hef_test
