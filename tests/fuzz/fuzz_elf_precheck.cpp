// libFuzzer target for the in-process adapter precheck
// (plugins/src/elf_precheck.cpp): every `*.so` in a search folder is read by
// it before anything is loaded, so a hostile file must end in a verdict
// (return, or PluginLoadError) and never in a crash, a sanitizer report or
// an unbounded read. The precheck reads a path; the input goes to a file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "llm2hef/plugins/elf_precheck.hpp"
#include "llm2hef/plugins/loader.hpp"

namespace {

const std::string& scratch_file() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string p = std::string(dir && *dir ? dir : "/tmp") + "/llm2hef-fuzz-elf-" + std::to_string(::getpid()) + ".so";
    return p;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = scratch_file();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    llm2hef::plugins::precheck_elf(path);
  } catch (const llm2hef::plugins::PluginLoadError&) {
  }
  return 0;
}
