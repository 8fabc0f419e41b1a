#include "llm2hef/registry/user_dirs.hpp"

#include <cstdlib>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

fs::path absolute_env(const char* name) {
  const char* v = std::getenv(name);
  if (v && fs::path(v).is_absolute()) return fs::path(v);
  return {};
}

}  // namespace

fs::path installed_adapter_dir() {
  fs::path dir = plugins::user_adapter_dir();
  if (dir.empty())
    throw BadInput("cannot tell where the user's adapters go: neither XDG_DATA_HOME nor HOME is an absolute path");
  return dir;
}

fs::path trusted_key_dir() {
  if (fs::path config = absolute_env("XDG_CONFIG_HOME"); !config.empty()) return config / "llm2hef" / "trusted-keys";
  if (fs::path home = absolute_env("HOME"); !home.empty()) return home / ".config" / "llm2hef" / "trusted-keys";
  throw BadInput("cannot tell where trusted keys are kept: neither XDG_CONFIG_HOME nor HOME is an absolute path");
}

fs::path shipped_key_dir() {
  if (const char* v = std::getenv("LLM2HEF_SHIPPED_KEYS_DIR"); v && *v) return fs::path(v);
  const fs::path exe = plugins::executable_path();
  if (exe.empty()) return {};
  return (exe.parent_path() / ".." / LLM2HEF_INSTALL_KEYS_SUBDIR).lexically_normal();
}

}  // namespace llm2hef::registry
