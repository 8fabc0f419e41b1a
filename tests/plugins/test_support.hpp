// Paths of the test adapters (from CMake) and small helpers shared by the
// plugin tests.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "llm2hef/plugins/host.hpp"

namespace llm2hef_test {

namespace fs = std::filesystem;

inline const fs::path adapter_dir{LLM2HEF_TEST_ADAPTER_DIR};
inline const fs::path adapter_dir_v2{LLM2HEF_TEST_ADAPTER_DIR_V2};

// A fresh folder under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "llm2hef_plugins_XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) std::abort();
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// What discovery recorded for `file` (loaded, or skipped and why).
inline const llm2hef::plugins::Considered& record_for(const llm2hef::plugins::AdapterHost& host, const fs::path& file) {
  for (const auto& c : host.considered())
    if (c.file == file) return c;
  throw std::runtime_error("no record for " + file.string());
}

}  // namespace llm2hef_test
