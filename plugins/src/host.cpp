#include "llm2hef/plugins/host.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include <boost/dll/runtime_symbol_info.hpp>

#include "llm2hef/plugins/elf_precheck.hpp"
#include "llm2hef/plugins/probe.hpp"

namespace fs = std::filesystem;

namespace llm2hef::plugins {

namespace {

// "a::b:" -> {"a", "b"}: empty entries are dropped rather than meaning "the
// current folder", which would load whatever .so happens to sit there.
std::vector<std::string> split_path_list(const std::string& value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    if (end > start) out.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool has_so_suffix(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 3 && name.ends_with(".so");
}

fs::path absolute_or_same(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  return ec ? p : abs.lexically_normal();
}

constexpr const char* kOverrideHint = " (pass --allow-unsafe-adapters to override)";

// lstat() of the canonical path (symlinks resolved first, so this is the
// object itself); nullopt when it cannot be resolved or stat-ed.
std::optional<struct stat> canonical_stat(const fs::path& p) {
  std::error_code ec;
  const fs::path canonical = fs::canonical(p, ec);
  if (ec) return std::nullopt;
  struct stat st {};
  if (::lstat(canonical.c_str(), &st) != 0) return std::nullopt;
  return st;
}

bool world_writable_folder(const fs::path& dir) {
  const auto st = canonical_stat(dir);
  return st && S_ISDIR(st->st_mode) && (st->st_mode & S_IWOTH) != 0;
}

}  // namespace

namespace {

// Every folder a lookup of `file` passes through: the ancestors of the path as
// given (each stat-ed through links) and of the canonical path of the file and
// of its folder, so that both a link and what it points to are covered.
std::vector<fs::path> folders_on_path(const fs::path& file) {
  std::vector<fs::path> out;
  auto add_ancestors = [&out](fs::path dir) {
    for (;;) {
      if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
      if (dir == dir.root_path() || dir.empty()) break;
      dir = dir.parent_path();
    }
  };
  const fs::path given = absolute_or_same(file);
  add_ancestors(given.parent_path());
  std::error_code ec;
  if (fs::path d = fs::canonical(given.parent_path(), ec); !ec) add_ancestors(d);
  if (fs::path f = fs::canonical(given, ec); !ec) add_ancestors(f.parent_path());
  return out;
}

// Why a folder on the path lets someone else swap the file, or empty.
std::string unsafe_folder_fact(const fs::path& dir, const std::string& what) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  // A sticky world-writable folder (/tmp) is safe to pass through: nobody
  // else may rename or delete the entries we own in it.
  if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0)
    return "folder " + dir.string() + " on the path to the " + what + " is world-writable";
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return "folder " + dir.string() + " on the path to the " + what + " is owned by uid " + std::to_string(st.st_uid) +
           ", not by you or root";
  return {};
}

}  // namespace

std::string replaceable_by_others(const fs::path& file, const std::string& what) {
  const auto st = canonical_stat(file);
  if (!st) return {};
  if ((st->st_mode & S_IWOTH) != 0) return "file is world-writable";
  if (st->st_uid != ::geteuid() && st->st_uid != 0)
    return "file is owned by uid " + std::to_string(st->st_uid) + ", not by you or root";
  for (const fs::path& dir : folders_on_path(file))
    if (std::string fact = unsafe_folder_fact(dir, what); !fact.empty()) return fact;
  return {};
}

std::string unsafe_file_reason(const fs::path& file) {
  const std::string fact = replaceable_by_others(file, "library");
  return fact.empty() ? fact : fact + "; refusing to load it" + kOverrideHint;
}

const char* to_string(RootKind kind) {
  switch (kind) {
    case RootKind::explicit_path: return "--adapter-path";
    case RootKind::environment: return "LLM2HEF_ADAPTER_PATH";
    case RootKind::install: return "install";
    case RootKind::build_tree: return "build tree";
    case RootKind::user: return "user";
  }
  return "unknown";
}

std::optional<std::string> adapter_path_from_environment() {
  const char* v = std::getenv("LLM2HEF_ADAPTER_PATH");
  if (!v) return std::nullopt;
  return std::string(v);
}

fs::path user_adapter_dir() {
  // The spec says a relative XDG_DATA_HOME is invalid and must be ignored.
  const char* data = std::getenv("XDG_DATA_HOME");
  if (data && fs::path(data).is_absolute()) return fs::path(data) / "llm2hef" / "adapters";
  const char* home = std::getenv("HOME");
  if (home && fs::path(home).is_absolute()) return fs::path(home) / ".local" / "share" / "llm2hef" / "adapters";
  return {};
}

fs::path executable_path() {
  boost::dll::fs::error_code ec;
  fs::path p = boost::dll::program_location(ec);
  return ec ? fs::path() : p;
}

fs::path install_adapter_dir(const fs::path& executable, std::string_view install_subdir) {
  if (executable.empty()) return {};
  return (executable.parent_path() / ".." / fs::path(install_subdir)).lexically_normal();
}

const LoadedAdapter* AdapterHost::find(std::string_view name) const {
  for (const auto& a : adapters_)
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<std::string> AdapterHost::names() const {
  std::vector<std::string> out;
  out.reserve(adapters_.size());
  for (const auto& a : adapters_) out.push_back(a.name());
  return out;
}

void AdapterHost::discover() {
  // Adapters first: their objects must go before anything else refers to them.
  adapters_.clear();
  roots_.clear();
  considered_.clear();
  seen_.clear();

  for (const auto& value : options_.explicit_paths)
    for (const auto& entry : split_path_list(value)) search_root(entry, RootKind::explicit_path);
  if (options_.environment)
    for (const auto& entry : split_path_list(*options_.environment)) search_root(entry, RootKind::environment);
  if (options_.install_dir && !options_.install_dir->empty()) search_root(*options_.install_dir, RootKind::install);
  if (options_.build_dir && !options_.build_dir->empty()) search_root(*options_.build_dir, RootKind::build_tree);
  if (options_.user_dir && !options_.user_dir->empty()) search_root(*options_.user_dir, RootKind::user);
}

void AdapterHost::search_root(const fs::path& given, RootKind kind) {
  const fs::path root = absolute_or_same(given);
  SearchRoot rec{root, kind, SearchRoot::State::missing, {}, false};
  std::error_code ec;
  const fs::file_status st = fs::status(root, ec);

  if (!fs::exists(st)) {
    // A missing folder is normal (no install, no build tree); just say so.
    if (ec && ec != std::errc::no_such_file_or_directory) {
      rec.state = SearchRoot::State::unreadable;
      rec.note = ec.message();
    } else {
      rec.note = "does not exist";
    }
    roots_.push_back(std::move(rec));
    return;
  }

  if (fs::is_regular_file(st)) {
    // A file named explicitly is tried whatever its name: the user asked for it.
    rec.state = SearchRoot::State::file;
    roots_.push_back(std::move(rec));
    consider(root, root, kind);
    return;
  }

  if (!fs::is_directory(st)) {
    rec.state = SearchRoot::State::unreadable;
    rec.note = "neither a folder nor a regular file";
    roots_.push_back(std::move(rec));
    return;
  }

  std::vector<fs::path> files;
  fs::directory_iterator it(root, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code entry_ec;
    // is_regular_file follows symlinks: a link to an adapter counts.
    if (has_so_suffix(it->path()) && it->is_regular_file(entry_ec)) files.push_back(it->path());
  }
  if (ec) {
    rec.state = SearchRoot::State::unreadable;
    rec.note = "cannot list: " + ec.message();
    roots_.push_back(std::move(rec));
    return;  // a half-listed folder would give order-dependent results
  }
  rec.state = SearchRoot::State::folder;
  // Anyone could have put (or swapped in) these files: refuse them all.
  std::string refusal;
  if (world_writable_folder(root)) {
    rec.world_writable = true;
    if (options_.allow_unsafe) {
      rec.note = "world-writable; loaded anyway (--allow-unsafe-adapters)";
    } else {
      rec.note = "world-writable; adapters refused";
      refusal = "folder " + root.string() + " is world-writable; refusing to load adapters from it" + kOverrideHint;
    }
  }
  roots_.push_back(std::move(rec));

  std::sort(files.begin(), files.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename().native() < b.filename().native(); });
  for (const auto& f : files) consider(f, root, kind, refusal);
}

void AdapterHost::consider(const fs::path& file, const fs::path& root, RootKind kind, const std::string& refusal) {
  Considered rec{file, root, kind, false, {}, std::nullopt, false};

  std::error_code ec;
  fs::path canonical = fs::canonical(file, ec);
  if (ec) canonical = file;
  if (auto it = seen_.find(canonical); it != seen_.end()) {
    const Considered& first = considered_[it->second];
    rec.reason = (first.loaded ? "already loaded from " : "already considered from ") + first.file.string();
    considered_.push_back(std::move(rec));
    return;
  }
  seen_.emplace(canonical, considered_.size());

  // The safety checks come before anything is dlopen-ed: loading runs the
  // library's constructors.
  if (!options_.allow_unsafe) {
    rec.reason = refusal.empty() ? unsafe_file_reason(file) : refusal;
    if (!rec.reason.empty()) {
      rec.unsafe = true;
      considered_.push_back(std::move(rec));
      return;
    }
  }

  // What the bytes alone rule out is refused here, without forking: a
  // folder of 10,000 non-adapters costs 10,000 short reads, not forks.
  try {
    precheck_elf(file);
  } catch (const PluginLoadError& e) {
    rec.reason = e.detail();
    rec.error = e.reason();
    considered_.push_back(std::move(rec));
    return;
  }

  // A library that ends its process while loading would end ours: load it
  // in a child first, and skip it by name if that child does not survive.
  if (options_.isolate_loading) {
    if (std::string killed = probe_in_child(file, options_.probe_timeout); !killed.empty()) {
      rec.reason = std::move(killed);
      rec.error = PluginLoadError::Reason::killed_process;
      considered_.push_back(std::move(rec));
      return;
    }
  }

  try {
    LoadedAdapter loaded = load_adapter(file);
    if (const LoadedAdapter* earlier = find(loaded.name())) {
      // Earlier roots win (see the header). `loaded` is unloaded on return.
      rec.reason = "adapter '" + loaded.name() + "' already provided by " + earlier->path().string();
    } else {
      adapters_.push_back(std::move(loaded));
      rec.loaded = true;
    }
  } catch (const PluginLoadError& e) {
    rec.reason = e.detail();
    rec.error = e.reason();
  } catch (const std::exception& e) {
    // Host-side trouble (e.g. out of memory) while loading: still only this file's problem.
    rec.reason = std::string("unexpected error while loading: ") + e.what();
  }
  considered_.push_back(std::move(rec));
}

}  // namespace llm2hef::plugins
