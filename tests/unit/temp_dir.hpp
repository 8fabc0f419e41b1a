// The one temporary-folder helper shared by the unit and plugin tests, so
// each test gets a folder of its own (tests run in parallel under ctest -j)
// and leaves nothing behind in the system temp dir.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace llm2hef::testing {

// A fresh, empty folder under the system temp dir, removed with everything in
// it when the object goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string name_template = (std::filesystem::temp_directory_path() / "llm2hef-test-XXXXXX").string();
    if (!::mkdtemp(name_template.data()))
      throw std::runtime_error("mkdtemp " + name_template + ": " + std::strerror(errno));
    path_ = name_template;
  }
  ~TempDir() {
    // Never throws from a destructor: a folder left behind is not worth
    // aborting the test run for.
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace llm2hef::testing
