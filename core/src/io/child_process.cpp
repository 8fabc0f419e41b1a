#include "llm2hef/core/io/child_process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <thread>

#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/sdk/errors.hpp"

extern char** environ;

namespace llm2hef::core {

namespace {

// Closes a descriptor once, on scope exit too.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void write_all(int fd, const std::string& text) {
  size_t at = 0;
  while (at < text.size()) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the child closed its end (it exited or stopped reading): its status says why
    at += static_cast<size_t>(n);
  }
}

}  // namespace

bool ChildResult::succeeded() const { return started() && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string ChildResult::describe() const {
  if (!started()) return std::string("could not be started: ") + std::strerror(start_error);
  return describe_wait_status(wait_status);
}

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* abbrev = ::sigabbrev_np(sig);
    std::string text = "was killed by " + (abbrev ? "SIG" + std::string(abbrev) : "signal " + std::to_string(sig));
    if (sig == SIGKILL)
      text +=
          " (out of memory? the kernel's out-of-memory killer sends SIGKILL; `dmesg` or "
          "`journalctl -k` says whether it did)";
    return text;
  }
  return "ended with wait status " + std::to_string(wait_status);
}

ChildResult run_child(const std::vector<std::string>& argv, const ChildIo& io) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  Fd in_read, in_write, out_read, out_write;
  const auto make_pipe = [](Fd& read_end, Fd& write_end) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw InternalError(std::string("pipe: ") + std::strerror(errno));
    read_end.fd = fds[0];
    write_end.fd = fds[1];
  };
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (io.stdin_text) {
    make_pipe(in_read, in_write);
    posix_spawn_file_actions_adddup2(&actions, in_read.fd, STDIN_FILENO);
  }
  if (io.capture_stdout) {
    make_pipe(out_read, out_write);
    posix_spawn_file_actions_adddup2(&actions, out_write.fd, STDOUT_FILENO);
  }
  // The child starts with nothing blocked and the default dispositions of
  // the signals the watcher handles, whatever this thread's mask is.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, watched;
  sigemptyset(&none);
  sigemptyset(&watched);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&watched, sig);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &watched);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) envp.push_back(*e);
  for (const std::string& entry : io.env_defaults) {
    const std::string name = entry.substr(0, entry.find('=') + 1);
    if (std::none_of(envp.begin(), envp.end(), [&](const char* e) { return std::string_view(e).starts_with(name); }))
      env_storage.push_back(entry);
  }
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  ChildResult result;
  pid_t pid = 0;
  // Registered with the watcher in the same step as it starts, so that a
  // signal arriving now is forwarded to it rather than leaving it orphaned.
  run_registered_child([&] {
    result.start_error = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
    return result.start_error == 0 ? pid : pid_t{-1};
  });
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  in_read.reset();
  out_write.reset();
  if (!result.started()) return result;

  std::thread feeder;
  if (io.stdin_text) {
    // A thread of its own: the child may fill its stdout pipe before it has
    // read all of its stdin.
    feeder = std::thread([&] {
      // EPIPE, not SIGPIPE, when the child exits without reading it all: a
      // signal raised by a write is this thread's, and dies with it.
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      write_all(in_write.fd, *io.stdin_text);
      in_write.reset();
    });
  }
  if (io.capture_stdout) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(out_read.fd, buf, sizeof buf);
      if (n > 0) {
        const size_t room = io.stdout_limit - std::min(io.stdout_limit, result.stdout_text.size());
        result.stdout_text.append(buf, std::min(room, static_cast<size_t>(n)));
      } else if (n == 0 || errno != EINTR) {
        break;
      }
    }
  }
  if (feeder.joinable()) feeder.join();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw InternalError(std::string("waitpid: ") + std::strerror(errno));
  // Blocks for good when a signal is being handled: the watcher, which owns
  // the child now, ends the process.
  forget_child(pid);
  result.wait_status = status;
  return result;
}

}  // namespace llm2hef::core
