#include "llm2hef/core/io/staging.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// Recursive: without_interruption() holds it around steps that register and
// unregister paths themselves.
std::recursive_mutex& registry_mutex() {
  static std::recursive_mutex m;
  return m;
}

std::set<pid_t>& children() {
  static std::set<pid_t> pids;
  return pids;
}

// Sends `sig` to every registered child and waits until each has ended (it
// may be reaped meanwhile by the thread that started it: ECHILD then), 10 s
// at most before SIGKILL.
void end_children(int sig) {
  for (pid_t pid : children()) ::kill(pid, sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (pid_t pid : children()) {
    for (;;) {
      siginfo_t info{};
      const int rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (rc != 0 && errno != EINTR) break;  // reaped already (ECHILD)
      if (rc == 0 && info.si_pid == pid) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::set<fs::path>& registry() {
  static std::set<fs::path> paths;
  return paths;
}

// Parent folders made for outputs, in the order they were made (outermost
// first); removed in reverse, and only when empty (::rmdir), so nothing
// another process put there is ever deleted.
std::vector<fs::path>& created_folders() {
  static std::vector<fs::path> folders;
  return folders;
}

void rmdir_innermost_first(const std::vector<fs::path>& folders) {
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) ::rmdir(it->c_str());
}

sigset_t cleanup_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

[[noreturn]] void watch_signals(sigset_t set) {
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  {
    // Held until exit: no output can be registered, committed or removed
    // by the main thread while its staging paths are being deleted.
    std::lock_guard lock(registry_mutex());
    // Children first: one still running could write an output after the
    // cleanup (calibrate.py did, in 9 of 17 interrupted runs).
    end_children(sig);
    // The main thread keeps running meanwhile and may create one more file
    // in a folder being removed: try again until it is gone.
    for (const auto& p : registry()) {
      std::error_code ec;
      for (int attempt = 0; attempt < 5 && fs::exists(fs::symlink_status(p, ec)); ++attempt) fs::remove_all(p, ec);
    }
    rmdir_innermost_first(created_folders());
    // Die of the same signal so the parent sees the usual status (128+sig).
    signal(sig, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    raise(sig);
  }
  _exit(128 + sig);
}

// `.<name>.tmp-` followed by the mkstemp/mkdtemp suffix (and maybe `.old`).
bool has_prefix(const std::string& entry, const std::string& prefix) {
  return entry.size() > prefix.size() && entry.compare(0, prefix.size(), prefix) == 0;
}

// `.<name>.tmp-*`: locked before it got this name (atomic_output.cpp).
bool is_staging_of(const std::string& entry, const std::string& name) {
  return has_prefix(entry, "." + name + ".tmp-");
}

// `.<name>.new-*`: between creation and its lock, for an instant.
bool is_unnamed_staging_of(const std::string& entry, const std::string& name) {
  return has_prefix(entry, "." + name + ".new-");
}

}  // namespace

void install_interrupt_cleanup() {
  sigset_t set = cleanup_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(watch_signals, set).detach();
}

fs::path create_staging(const std::function<fs::path()>& create) {
  // Under the lock the watcher takes first: a signal arriving while the path
  // is being created waits for it to be registered, then removes it.
  std::lock_guard lock(registry_mutex());
  fs::path path = create();
  registry().insert(path);
  return path;
}

void run_registered_child(const std::function<pid_t()>& start) {
  std::lock_guard lock(registry_mutex());
  const pid_t pid = start();
  if (pid > 0) children().insert(pid);
}

void forget_child(pid_t pid) {
  std::lock_guard lock(registry_mutex());
  children().erase(pid);
}

void without_interruption(const std::function<void()>& critical) {
  std::lock_guard lock(registry_mutex());
  critical();
}

void unregister_staging(const fs::path& path) {
  std::lock_guard lock(registry_mutex());
  registry().erase(path);
}

void note_created_folders(const std::vector<fs::path>& folders) {
  std::lock_guard lock(registry_mutex());
  created_folders().insert(created_folders().end(), folders.begin(), folders.end());
}

void forget_created_folders(const std::vector<fs::path>& folders) {
  std::lock_guard lock(registry_mutex());
  auto& all = created_folders();
  for (const auto& f : folders) {
    const auto it = std::find(all.begin(), all.end(), f);
    if (it != all.end()) all.erase(it);
  }
}

void remove_created_folders(const std::vector<fs::path>& folders) {
  rmdir_innermost_first(folders);
  forget_created_folders(folders);
}

namespace {

std::mutex& targets_mutex() {
  static std::mutex m;
  return m;
}

// staging path -> the output's path, for every staging path of this run
// (kept after the staging path is gone: that is when messages are read).
std::map<std::string, std::string>& staging_targets() {
  static std::map<std::string, std::string> m;
  return m;
}

}  // namespace

void note_staging_target(const fs::path& staging, const fs::path& target) {
  std::lock_guard lock(targets_mutex());
  staging_targets()[staging.string()] = target.string();
}

std::string name_outputs_by_target(std::string message) {
  std::lock_guard lock(targets_mutex());
  bool renamed = false;
  for (const auto& [staging, target] : staging_targets()) {
    for (size_t at = message.find(staging); at != std::string::npos; at = message.find(staging, at + target.size())) {
      message.replace(at, staging.size(), target);
      renamed = true;
    }
  }
  if (renamed) message += " (while it was being written; nothing of the new output was kept)";
  return message;
}

bool lock_staging(int fd) { return ::flock(fd, LOCK_EX | LOCK_NB) == 0; }

namespace {

// Removes the entries of `parent` that `matches` accepts, are regular files
// or folders and locked by nobody; with `grace`, only those older than a
// minute (a path created a moment ago may not be locked yet).
std::vector<fs::path> sweep(const fs::path& parent, const std::function<bool(const std::string&)>& matches,
                            bool grace) {
  std::vector<fs::path> removed;
  std::error_code ec;
  fs::directory_iterator it(parent, ec);
  if (ec) return removed;
  const auto now = fs::file_time_type::clock::now();
  for (const auto& entry : it) {
    if (!matches(entry.path().filename().string())) continue;
    const fs::file_status st = entry.symlink_status(ec);
    if (ec || !(fs::is_directory(st) || fs::is_regular_file(st))) continue;
    const auto age = now - fs::last_write_time(entry.path(), ec);
    if (ec || (grace && age < std::chrono::minutes(1))) continue;
    const int fd = ::open(entry.path().c_str(),
                          (fs::is_directory(st) ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    const bool stale = lock_staging(fd);  // held by nobody: its owner is gone
    if (stale) {
      fs::remove_all(entry.path(), ec);
      if (!ec) {
        spdlog::warn("{}: removed, left by an interrupted run", entry.path().string());
        removed.push_back(entry.path());
      }
    }
    ::close(fd);
  }
  return removed;
}

}  // namespace

std::vector<fs::path> sweep_stale_staging(const fs::path& target) {
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  const std::string name = target.filename().string();
  // A `.tmp-` path is locked from the moment it has that name, so nobody
  // holding it means its run is dead: removed at once, so an export killed
  // and rerun straight away leaves nothing. The `.new-` instant keeps the minute.
  std::vector<fs::path> removed = sweep(
      parent, [&](const std::string& entry) { return is_staging_of(entry, name); }, false);
  for (auto& p : sweep(
           parent, [&](const std::string& entry) { return is_unnamed_staging_of(entry, name); }, true))
    removed.push_back(std::move(p));
  return removed;
}

std::vector<fs::path> sweep_stale_scratch(const fs::path& dir, const std::string& prefix) {
  return sweep(
      dir.empty() ? fs::path(".") : dir, [&](const std::string& entry) { return has_prefix(entry, prefix); }, true);
}

ScratchFile::ScratchFile(const fs::path& dir, const std::string& prefix) {
  path_ = create_staging([&] {
    std::string templ = (dir / (prefix + "XXXXXX")).string();
    fd_ = ::mkstemp(templ.data());
    if (fd_ < 0)
      throw std::system_error(errno, std::generic_category(), dir.string() + ": cannot create a scratch file");
    return fs::path(templ);
  });
  lock_staging(fd_);  // a fresh file: nobody else can hold it
}

ScratchFile::~ScratchFile() {
  std::error_code ec;
  fs::remove(path_, ec);
  unregister_staging(path_);
  ::close(fd_);
}

}  // namespace llm2hef::core
