// Finding and loading every adapter the user can reach.
//
// Search order (docs/plugin-abi.md, "Discovery"):
//   1. --adapter-path values (each a folder or one library file; ':' separates
//      several entries in one value),
//   2. the LLM2HEF_ADAPTER_PATH environment variable (':'-separated),
//   3. the install folder, <prefix>/lib/llm2hef/adapters,
//   4. the build tree's adapter folder,
//   5. the user's adapter folder, $XDG_DATA_HOME/llm2hef/adapters (default
//      ~/.local/share/llm2hef/adapters), where `llm2hef registry install`
//      puts adapters. It comes after the built-in folders so that an adapter
//      installed from an index can never shadow a first-party one.
// Earlier roots win: when two files provide an adapter with the same name, the
// one found first is kept and the later one is skipped (and reported). This
// lets a user shadow an installed adapter with a development build by passing
// --adapter-path, without uninstalling anything.
//
// Within a folder every regular file (or link to one) whose name ends in ".so"
// is tried, in name order so that results do not depend on directory order.
// A file reached twice (the same folder listed twice, a symlink) is loaded once.
// Every file tried leaves a Considered record, so nothing is skipped silently.
//
// Adapters are native code, so before anything is dlopen-ed the host refuses
// (unless SearchOptions::allow_unsafe, --allow-unsafe-adapters):
//   - every file in a search folder that is world-writable (S_IWOTH);
//   - a file that is world-writable, or owned by neither the effective user
//     nor root (checked on the canonical path: a link's target);
//   - a file with a folder on its path (of the link as given, and of its
//     target) that is world-writable without the sticky bit, or owned by
//     neither the effective user nor root: whoever can write there can swap
//     the library.
// Each library that passes is then loaded once in a child process
// (probe_in_child, probe.hpp), so that one that ends its process while
// loading is reported and skipped instead of ending llm2hef.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/plugins/loader.hpp"

namespace llm2hef::plugins {

enum class RootKind { explicit_path, environment, install, build_tree, user };

// "--adapter-path", "LLM2HEF_ADAPTER_PATH", "install", "build tree", "user".
const char* to_string(RootKind kind);

// The value of LLM2HEF_ADAPTER_PATH, or nullopt when unset.
std::optional<std::string> adapter_path_from_environment();

// The running executable (from /proc/self/exe); empty when unknown.
std::filesystem::path executable_path();

// <exe dir>/../<install_subdir>, the adapters folder of an installed llm2hef.
// `install_subdir` is LLM2HEF_INSTALL_ADAPTER_SUBDIR (e.g. "lib/llm2hef/adapters").
std::filesystem::path install_adapter_dir(const std::filesystem::path& executable, std::string_view install_subdir);

// $XDG_DATA_HOME/llm2hef/adapters, or $HOME/.local/share/llm2hef/adapters
// when XDG_DATA_HOME is unset or not absolute (XDG Base Directory rules);
// empty when neither variable gives an absolute path.
std::filesystem::path user_adapter_dir();

// Why someone other than the effective user and root could replace `file`:
// it, or a folder on its path, is world-writable (a sticky folder such as
// /tmp excepted) or owned by another user; empty when nobody else could.
// `what` names the file in the folder message ("library", "trusted key").
// The rule behind adapters' safety and the registry's trust store.
std::string replaceable_by_others(const std::filesystem::path& file, const std::string& what);

// Why the safety rules above refuse to load `file` (replaceable_by_others,
// then "; refusing to load it"), or empty when it may be loaded. A file
// that cannot be stat-ed is left for load_adapter() to report.
std::string unsafe_file_reason(const std::filesystem::path& file);

struct SearchOptions {
  // --adapter-path values, in command-line order; each may hold ':'-separated entries.
  std::vector<std::string> explicit_paths;
  // LLM2HEF_ADAPTER_PATH; read from the environment by default, so tests can
  // replace or clear it.
  std::optional<std::string> environment = adapter_path_from_environment();
  std::optional<std::filesystem::path> install_dir;
  std::optional<std::filesystem::path> build_dir;
  std::optional<std::filesystem::path> user_dir;  // user_adapter_dir() for the CLI
  // --allow-unsafe-adapters: load from world-writable folders and files, and
  // files owned by someone else (see the safety checks above).
  bool allow_unsafe = false;
  // Load each library in a child process first (see above). Only tests of
  // the loader itself turn this off.
  bool isolate_loading = true;
  // How long that child may take before it is killed and the file skipped.
  std::chrono::milliseconds probe_timeout = std::chrono::seconds(10);
};

// One place searched.
struct SearchRoot {
  std::filesystem::path path;
  RootKind kind;
  enum class State { folder, file, missing, unreadable } state;
  // Why it is missing or unreadable, or that the folder is world-writable;
  // empty otherwise.
  std::string note;
  // The folder is world-writable: its files were refused unless allow_unsafe.
  bool world_writable = false;
};

// One file tried.
struct Considered {
  std::filesystem::path file;
  std::filesystem::path root;  // the SearchRoot::path it came from
  RootKind root_kind;
  bool loaded = false;
  std::string reason;  // empty when loaded; otherwise why it was skipped
  // Set when the file itself is broken (not for duplicates).
  std::optional<PluginLoadError::Reason> error;
  // Refused by the safety checks before loading (error stays empty: the file
  // itself was never opened as a library).
  bool unsafe = false;
};

class AdapterHost {
 public:
  AdapterHost() = default;  // no roots: discover() finds nothing
  explicit AdapterHost(SearchOptions options) : options_(std::move(options)) {}
  AdapterHost(AdapterHost&&) noexcept = default;
  AdapterHost& operator=(AdapterHost&&) noexcept = default;
  AdapterHost(const AdapterHost&) = delete;
  AdapterHost& operator=(const AdapterHost&) = delete;

  // Searches every root and loads what it can. A broken plugin is recorded
  // and skipped; this never throws for plugin or file-system problems.
  // Calling it again starts over: adapters from the previous run are unloaded,
  // so references to them become invalid.
  void discover();

  // Loaded adapters in discovery order (the order of precedence).
  const std::vector<LoadedAdapter>& adapters() const { return adapters_; }
  const LoadedAdapter* find(std::string_view name) const;
  std::vector<std::string> names() const;

  const std::vector<SearchRoot>& roots() const { return roots_; }
  const std::vector<Considered>& considered() const { return considered_; }
  const SearchOptions& options() const { return options_; }

 private:
  void search_root(const std::filesystem::path& root, RootKind kind);
  void consider(const std::filesystem::path& file, const std::filesystem::path& root, RootKind kind,
                const std::string& refusal = {});

  SearchOptions options_{.explicit_paths = {},
                         .environment = std::nullopt,
                         .install_dir = {},
                         .build_dir = {},
                         .user_dir = {},
                         .allow_unsafe = false,
                         .isolate_loading = true,
                         .probe_timeout = std::chrono::seconds(10)};
  std::vector<LoadedAdapter> adapters_;
  std::vector<SearchRoot> roots_;
  std::vector<Considered> considered_;
  std::map<std::filesystem::path, std::size_t> seen_;  // canonical file -> index into considered_
};

}  // namespace llm2hef::plugins
