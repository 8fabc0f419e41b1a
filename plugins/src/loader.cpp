#include "llm2hef/plugins/loader.hpp"

#include <dlfcn.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include <boost/dll/shared_library.hpp>

#include "llm2hef/plugins/elf_precheck.hpp"
#include "llm2hef/sdk/abi.hpp"

namespace llm2hef::plugins {

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, PluginLoadError::Reason reason, std::string detail) {
  throw PluginLoadError(path, reason, std::move(detail));
}

}  // namespace

PluginLoadError::PluginLoadError(std::filesystem::path path, Reason reason, std::string detail)
    : std::runtime_error(path.string() + ": " + detail),
      path_(std::move(path)),
      reason_(reason),
      detail_(std::move(detail)) {}

const char* to_string(PluginLoadError::Reason reason) {
  using R = PluginLoadError::Reason;
  switch (reason) {
    case R::unreadable: return "unreadable";
    case R::not_elf: return "not_elf";
    case R::wrong_platform: return "wrong_platform";
    case R::load_failed: return "load_failed";
    case R::unresolved_symbol: return "unresolved_symbol";
    case R::missing_entry: return "missing_entry";
    case R::entry_failed: return "entry_failed";
    case R::abi_mismatch: return "abi_mismatch";
    case R::bad_descriptor: return "bad_descriptor";
    case R::fingerprint_mismatch: return "fingerprint_mismatch";
    case R::factory_failed: return "factory_failed";
    case R::info_failed: return "info_failed";
    case R::name_mismatch: return "name_mismatch";
    case R::killed_process: return "killed_process";
  }
  return "unknown";
}

struct LoadedAdapter::Library {
  boost::dll::shared_library lib;
};

void LoadedAdapter::Destroy::operator()(sdk::Adapter* a) const noexcept {
  // The plugin made the object, so only the plugin's destroy() may free it
  // (its operator delete, its destructor). A throwing destructor must not
  // take the host down.
  if (!a || !fn) return;
  try {
    fn(a);
  } catch (...) {
  }
}

LoadedAdapter::LoadedAdapter() = default;
LoadedAdapter::LoadedAdapter(LoadedAdapter&&) noexcept = default;
LoadedAdapter::~LoadedAdapter() = default;  // members in reverse order: adapter, then library

LoadedAdapter& LoadedAdapter::operator=(LoadedAdapter&& other) noexcept {
  if (this == &other) return *this;
  // Same rule as the destructor: release our adapter while its library is
  // still loaded, and only then drop the library.
  adapter_ = std::move(other.adapter_);
  library_ = std::move(other.library_);
  info_ = std::move(other.info_);
  path_ = std::move(other.path_);
  return *this;
}

LoadedAdapter load_adapter(const std::filesystem::path& path) {
  using R = PluginLoadError::Reason;
  // dlopen() on a text file says "invalid ELF header", on another
  // machine's library "wrong ELF class"; the precheck says it plainly, and
  // refuses a library without the entry symbol before its constructors run.
  precheck_elf(path);

  // Lives in `result` from the start, so that on any failure below the
  // adapter (if made) is destroyed before the library is unloaded.
  LoadedAdapter result;
  result.path_ = path;
  result.library_ = std::make_unique<LoadedAdapter::Library>();
  auto& lib = result.library_->lib;

  // rtld_now: Boost.DLL is lazy by default, and an unresolved symbol would
  // then abort the process on first call instead of failing here.
  // rtld_local: adapters must not see each other's symbols.
  boost::dll::fs::error_code ec;
  lib.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    // Boost.DLL leaves dlerror() untouched after a failed load (its throwing
    // overload reads it the same way); it is the only place that says *why*.
    const char* err = ::dlerror();
    std::string text = err ? err : ec.message();
    if (text.find("undefined symbol") != std::string::npos)
      fail(path, R::unresolved_symbol, "unresolved symbol: " + text);
    fail(path, R::load_failed, "cannot be loaded: " + text);
  }

  if (!lib.has(LLM2HEF_ADAPTER_ENTRY_SYMBOL))
    fail(path, R::missing_entry,
         std::string("missing entry symbol '") + LLM2HEF_ADAPTER_ENTRY_SYMBOL + "' (not an llm2hef adapter)");

  // Until the fingerprint matches we cannot assume the plugin shares our C++
  // runtime, so its exceptions are caught but not trusted beyond what().
  auto entry = lib.get<const llm2hef_adapter_entry_t*()>(LLM2HEF_ADAPTER_ENTRY_SYMBOL);
  const llm2hef_adapter_entry_t* desc = nullptr;
  std::optional<std::string> entry_error;
  try {
    desc = entry();
  } catch (const std::exception& e) {
    entry_error = std::string("entry point threw: ") + e.what();
  } catch (...) {
    entry_error = "entry point threw a non-standard exception";
  }
  if (entry_error) fail(path, R::entry_failed, *entry_error);
  if (!desc) fail(path, R::entry_failed, "entry point returned no descriptor");

  if (desc->abi_version != LLM2HEF_ADAPTER_ABI_VERSION)
    fail(path, R::abi_mismatch,
         "adapter ABI version " + std::to_string(desc->abi_version) + ", this llm2hef expects " +
             std::to_string(LLM2HEF_ADAPTER_ABI_VERSION));
  if (desc->struct_size < sizeof(llm2hef_adapter_entry_t))
    fail(path, R::bad_descriptor,
         "descriptor is " + std::to_string(desc->struct_size) + " bytes, this llm2hef expects at least " +
             std::to_string(sizeof(llm2hef_adapter_entry_t)));
  if (!desc->name || !desc->fingerprint || !desc->create || !desc->destroy)
    fail(path, R::bad_descriptor, "descriptor has a null name, fingerprint, create or destroy");

  static constexpr const char* host_fingerprint = LLM2HEF_BUILD_FINGERPRINT;
  if (std::strcmp(desc->fingerprint, host_fingerprint) != 0)
    fail(path, R::fingerprint_mismatch,
         "build fingerprint mismatch: adapter '" + std::string(desc->fingerprint) + "', host '" + host_fingerprint +
             "'");

  // Copied: the string lives in the plugin, which may be unloaded before the
  // message is shown.
  const std::string descriptor_name = desc->name;
  result.adapter_ = std::unique_ptr<sdk::Adapter, LoadedAdapter::Destroy>(nullptr, {desc->destroy});

  // Messages are copied out of the handlers before throwing: the exception
  // object's code lives in the plugin, which unwinding is about to unload.
  std::optional<std::string> factory_error;
  try {
    result.adapter_.reset(desc->create());
  } catch (const std::exception& e) {
    factory_error = std::string("factory threw: ") + e.what();
  } catch (...) {
    factory_error = "factory threw a non-standard exception";
  }
  if (factory_error) fail(path, R::factory_failed, *factory_error);
  if (!result.adapter_) fail(path, R::factory_failed, "factory returned no adapter");

  std::optional<std::string> info_error;
  try {
    result.info_ = result.adapter_->info();
  } catch (const std::exception& e) {
    info_error = std::string("info() threw: ") + e.what();
  } catch (...) {
    info_error = "info() threw a non-standard exception";
  }
  if (info_error) fail(path, R::info_failed, *info_error);
  if (result.info_.name != descriptor_name)
    fail(path, R::name_mismatch,
         "descriptor name '" + descriptor_name + "' differs from info() name '" + result.info_.name + "'");

  return result;
}

}  // namespace llm2hef::plugins
