#include "llm2hef/plugins/probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "llm2hef/plugins/loader.hpp"

namespace llm2hef::plugins {

namespace {

constexpr char kFinished = 'F';

// The host blocks SIGINT/SIGTERM/SIGHUP in every thread and leaves them to a
// sigwait() thread (core/src/io/staging.cpp). That thread does not exist in
// the child, so the child gets the defaults back: Ctrl-C must still end it.
void restore_default_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Output the library writes while loading would otherwise appear twice (once
// from the child, once from the host's own load).
void silence_output() {
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  ::dup2(null_fd, STDOUT_FILENO);
  ::dup2(null_fd, STDERR_FILENO);
  ::close(null_fd);
}

[[noreturn]] void run_child(const std::filesystem::path& path, int report_fd) {
  restore_default_signals();
  silence_output();
  try {
    LoadedAdapter loaded = load_adapter(path);
  } catch (...) {
    // Rejected cleanly: the host's own load gives the same reason.
  }
  // Written only after the adapter was destroyed and the library unloaded, so
  // a destructor that ends the process is caught too.
  const char byte = kFinished;
  [[maybe_unused]] const ssize_t n = ::write(report_fd, &byte, 1);
  // _exit: no atexit handlers or stdio flushes inherited from the host.
  ::_exit(0);
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "the library killed its process while loading (signal " + std::to_string(sig) +
           (name ? std::string(", ") + name : std::string()) + ")";
  }
  if (WIFEXITED(status))
    return "the library ended its process while loading (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  return "the library ended its process while loading (wait status " + std::to_string(status) + ")";
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return status;
}

}  // namespace

std::string probe_in_child(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return std::string("cannot isolate the load (pipe: ") + std::strerror(errno) + "); not loaded";
  // Anything the host buffered would be written a second time if the library
  // called exit() in the child.
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return std::string("cannot isolate the load (fork: ") + std::strerror(err) + "); not loaded";
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(path, fds[1]);
  }
  ::close(fds[1]);

  // Waits for the report byte or for the pipe to close (the child ended);
  // a grandchild holding the pipe open cannot stretch this past `timeout`.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char byte = 0;
  bool finished = false;
  bool timed_out = false;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      timed_out = true;
      break;
    }
    if (r < 0) break;
    const ssize_t n = ::read(fds[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    finished = n == 1 && byte == kFinished;
    break;
  }
  ::close(fds[0]);

  if (timed_out) ::kill(pid, SIGKILL);
  const int status = wait_for(pid);
  if (timed_out)
    return "the library did not finish loading within " + std::to_string(timeout.count()) +
           " ms (its loading process was killed)";
  if (finished && status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  if (status < 0) return "the library's loading process could not be waited for; not loaded";
  return describe(status);
}

}  // namespace llm2hef::plugins
