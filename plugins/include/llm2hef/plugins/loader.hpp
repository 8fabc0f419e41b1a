// Loading one adapter shared library, with every check the plugin ABI asks for
// (docs/plugin-abi.md).
//
// load_adapter() either returns a fully checked adapter or throws
// PluginLoadError naming the file and the precise reason. Nothing a plugin does
// while being loaded (a bad file, a missing symbol, a throwing factory) escapes
// as anything else, so the host can report the file and carry on.
#pragma once

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include "llm2hef/sdk/adapter.hpp"

namespace llm2hef::plugins {

class PluginLoadError : public std::runtime_error {
 public:
  // Which check failed, in the order load_adapter() runs them.
  enum class Reason {
    unreadable,         // the file cannot be opened at all
    not_elf,            // no ELF magic, or an ELF file that is no shared library
    wrong_platform,     // an ELF shared library for another class, byte order or machine
    load_failed,        // dlopen refused it
    unresolved_symbol,  // dlopen refused it because of an undefined symbol
    missing_entry,      // no llm2hef_adapter_entry symbol
    entry_failed,       // the entry point threw or returned null
    abi_mismatch,       // descriptor abi_version differs from the host's
    bad_descriptor,     // descriptor too small or with null fields
    fingerprint_mismatch,
    factory_failed,  // create() threw or returned null
    info_failed,     // info() threw
    name_mismatch,   // descriptor name != info().name
    killed_process,  // loading it in a child process ended that process (probe.hpp)
  };

  PluginLoadError(std::filesystem::path path, Reason reason, std::string detail);

  const std::filesystem::path& path() const noexcept { return path_; }
  Reason reason() const noexcept { return reason_; }
  // The message without the "<path>: " prefix, for reports that show the
  // path in a column of their own.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::filesystem::path path_;
  Reason reason_;
  std::string detail_;
};

// A short stable token per reason ("not_elf", ...), for JSON reports.
const char* to_string(PluginLoadError::Reason reason);

// One adapter and the library that made it. The library stays loaded for as
// long as this object lives, and the adapter is handed back to the plugin's own
// destroy() before the library is unloaded. A moved-from LoadedAdapter may
// only be destroyed or assigned to.
class LoadedAdapter {
 public:
  LoadedAdapter(LoadedAdapter&&) noexcept;
  LoadedAdapter& operator=(LoadedAdapter&&) noexcept;
  LoadedAdapter(const LoadedAdapter&) = delete;
  LoadedAdapter& operator=(const LoadedAdapter&) = delete;
  ~LoadedAdapter();

  const sdk::Adapter& adapter() const { return *adapter_; }
  // info() as returned once at load time; adapters describe themselves
  // statically, and caching it keeps reports from calling into the plugin.
  const sdk::AdapterInfo& info() const { return info_; }
  const std::string& name() const { return info_.name; }
  // The path it was loaded from (absolute, not canonicalized: what the user
  // recognizes).
  const std::filesystem::path& path() const { return path_; }

 private:
  friend LoadedAdapter load_adapter(const std::filesystem::path& path);

  struct Library;  // wraps boost::dll::shared_library; kept out of this header
  using DestroyFn = void (*)(sdk::Adapter*);
  struct Destroy {
    // No default member initializer: it would make Destroy look not
    // default-constructible inside LoadedAdapter to GCC. unique_ptr
    // value-initializes it, which sets fn to null.
    DestroyFn fn;
    void operator()(sdk::Adapter* a) const noexcept;
  };

  LoadedAdapter();

  // Declaration order matters: members are destroyed in reverse, so the
  // adapter goes back to the plugin while its code is still mapped.
  std::unique_ptr<Library> library_;
  std::unique_ptr<sdk::Adapter, Destroy> adapter_;
  sdk::AdapterInfo info_;
  std::filesystem::path path_;
};

// Loads and checks one adapter library. Throws PluginLoadError only.
LoadedAdapter load_adapter(const std::filesystem::path& path);

}  // namespace llm2hef::plugins
