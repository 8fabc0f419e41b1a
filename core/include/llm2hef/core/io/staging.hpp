// Staging files and folders that never outlive their run.
//
// Every atomic output (AtomicDir, AtomicFile) is built in a hidden sibling
// `.<name>.tmp-XXXXXX`. Two things could leave one behind: a signal (Ctrl-C,
// SIGTERM) and a process killed outright (SIGKILL, the OOM killer). The first
// is handled by a watcher thread that removes every registered staging path
// and then dies of the same signal; the second by a lock: each staging path is
// flock()ed by its owner for as long as it lives, so the next run that writes
// the same target removes siblings nobody holds (the kernel drops a dead
// process's locks).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace llm2hef::core {

// Starts the watcher for SIGINT, SIGTERM and SIGHUP. Call once from main()
// before any other thread exists (the signals are blocked in every thread
// and handled by the watcher alone).
void install_interrupt_cleanup();

// Runs `create` (mkdtemp, mkstemp...) and registers the path it returns as
// one the watcher removes on a signal, atomically with respect to the
// watcher; unregister once the path is committed or removed.
std::filesystem::path create_staging(const std::function<std::filesystem::path()>& create);
void unregister_staging(const std::filesystem::path& path);

// Child processes the watcher owns on a signal: it sends them the same
// signal, waits for them (at most 10 s, then SIGKILL), and only then removes
// the staging paths and dies. `start` starts the child and returns its pid
// (or -1), under the lock the watcher takes, so no signal falls between the
// start and the registration. forget_child() after reaping it; it blocks for
// good while a signal is being handled (the watcher is about to end the
// process, and the caller must not go on to report the child's death).
void run_registered_child(const std::function<pid_t()>& start);
void forget_child(pid_t pid);

// Runs `critical` with no signal handled meanwhile: the watcher waits until
// it returns. For steps that must happen together or not at all (replacing a
// previous export: old aside, new in place).
void without_interruption(const std::function<void()>& critical);

// Folders made for an output's missing parents (outermost first): the
// watcher removes them on a signal, innermost first and only when empty,
// after the staging paths. remove_created_folders() does the same at once (a
// failed run) and forgets them; forget_created_folders() once the output is
// in place.
void note_created_folders(const std::vector<std::filesystem::path>& folders);
void forget_created_folders(const std::vector<std::filesystem::path>& folders);
void remove_created_folders(const std::vector<std::filesystem::path>& folders);

// The output a staging path is built for. Errors raised while writing name
// the staging path (the file that failed), which is removed before the user
// reads the message; name_outputs_by_target() rewrites every staging path a
// message names to its output's own path, so messages name what the user
// asked for, never a hidden file that is gone.
void note_staging_target(const std::filesystem::path& staging, const std::filesystem::path& target);
std::string name_outputs_by_target(std::string message);

// Takes an exclusive, non-blocking flock on `fd`; false if another process
// holds it.
bool lock_staging(int fd);

// Removes staging siblings of `target` (`.<name>.tmp-*`, and `.old` folders
// of an interrupted replace) that no live process holds, however recent: a
// staging path is locked before it gets its `.tmp-` name. A `.<name>.new-*`
// (killed in the instant before that) is removed once over a minute old.
// Returns the paths removed; each is reported on stderr.
std::vector<std::filesystem::path> sweep_stale_staging(const std::filesystem::path& target);

// The same for scratch files `<dir>/<prefix>XXXXXX` (ScratchFile below).
std::vector<std::filesystem::path> sweep_stale_scratch(const std::filesystem::path& dir, const std::string& prefix);

// A scratch file that never outlives its run: created with mkstemp, locked
// for its lifetime, registered with the signal watcher, removed on scope
// exit. Throws std::system_error when it cannot be created.
class ScratchFile {
 public:
  ScratchFile(const std::filesystem::path& dir, const std::string& prefix);
  ~ScratchFile();
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace llm2hef::core
