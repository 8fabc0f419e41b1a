#include "llm2hef/core/io/contract_doc.hpp"

#include <system_error>

#include "llm2hef/plugins/host.hpp"

// Both set by core/CMakeLists.txt for this file only: the install layout
// (GNUInstallDirs, usually relative to the prefix) and the source tree's docs.
#ifndef LLM2HEF_INSTALL_BINDIR
#error "LLM2HEF_INSTALL_BINDIR must be defined by the build"
#endif
#ifndef LLM2HEF_INSTALL_DOCDIR
#error "LLM2HEF_INSTALL_DOCDIR must be defined by the build"
#endif
#ifndef LLM2HEF_SOURCE_DOCDIR
#error "LLM2HEF_SOURCE_DOCDIR must be defined by the build"
#endif

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

constexpr const char* kContractFile = "hailo-contract.md";

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The install prefix of an executable installed to <prefix>/<bindir>/.
fs::path install_prefix(const fs::path& executable) {
  fs::path prefix = executable.parent_path();
  for (const auto& part : fs::path(LLM2HEF_INSTALL_BINDIR).relative_path())
    if (!part.empty() && part != ".") prefix = prefix.parent_path();
  return prefix;
}

}  // namespace

fs::path contract_doc_path_for(const fs::path& executable) {
  const fs::path docdir(LLM2HEF_INSTALL_DOCDIR);
  fs::path installed;
  if (docdir.is_absolute())
    installed = docdir / kContractFile;
  else if (!executable.empty())
    installed = (install_prefix(executable) / docdir / kContractFile).lexically_normal();
  if (!installed.empty() && is_regular(installed)) return installed;
  const fs::path source = (fs::path(LLM2HEF_SOURCE_DOCDIR) / kContractFile).lexically_normal();
  if (is_regular(source) || installed.empty()) return source;
  return installed;
}

const fs::path& contract_doc_path() {
  static const fs::path path = contract_doc_path_for(plugins::executable_path());
  return path;
}

}  // namespace llm2hef::core
