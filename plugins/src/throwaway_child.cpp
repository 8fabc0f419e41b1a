#include "llm2hef/plugins/throwaway_child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace llm2hef::plugins {

namespace {

// The report is framed by its length (16 hex digits), so the parent knows
// when it has all of it without waiting for the pipe to close: a process
// the work forked could keep the pipe open long after the child is gone.
constexpr std::size_t kHeaderBytes = 16;

void restore_default_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// Output the work writes (a library's messages while loading) would
// otherwise appear twice: once from the child, once from the host's own load.
void silence_output() {
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (null_fd < 0) return;
  ::dup2(null_fd, STDOUT_FILENO);
  ::dup2(null_fd, STDERR_FILENO);
  ::close(null_fd);
}

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

[[noreturn]] void run_child(const std::function<std::string()>& work, int report_fd) {
  restore_default_signals();
  silence_output();
  std::string report;
  try {
    report = work();
  } catch (...) {
    report.clear();
  }
  char header[kHeaderBytes + 1];
  std::snprintf(header, sizeof header, "%016zx", report.size());
  write_all(report_fd, std::string(header, kHeaderBytes) + report);
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
  return "the library's loading process ended abnormally (wait status " + std::to_string(status) + ")";
}

}  // namespace

ChildOutcome run_in_child(const std::function<std::string()>& work, std::chrono::milliseconds timeout,
                          std::size_t max_report) {
  ChildOutcome out;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    out.failure = std::string("pipe: ") + std::strerror(errno);
    return out;
  }
  // Anything the host buffered would be written a second time if the work
  // called exit() in the child.
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    out.failure = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return out;
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(work, fds[1]);
  }
  ::close(fds[1]);
  out.started = true;

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string received;
  std::size_t expected = SIZE_MAX;  // report length, once the header is in
  bool complete = false;
  char buffer[4096];
  while (!complete) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      out.timed_out = true;
      break;
    }
    if (r < 0) break;
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the pipe closed before the report was complete
    received.append(buffer, static_cast<std::size_t>(n));
    if (expected == SIZE_MAX && received.size() >= kHeaderBytes) {
      char* end = nullptr;
      const std::string header = received.substr(0, kHeaderBytes);
      const unsigned long long length = std::strtoull(header.c_str(), &end, 16);
      if (end != header.c_str() + kHeaderBytes) break;  // not our framing: no report
      if (length > max_report) {
        out.too_long = true;
        break;
      }
      expected = static_cast<std::size_t>(length);
    }
    if (received.size() > kHeaderBytes + max_report) {
      out.too_long = true;
      break;
    }
    complete = expected != SIZE_MAX && received.size() >= kHeaderBytes + expected;
  }
  if (complete) out.report = received.substr(kHeaderBytes, expected);
  ::close(fds[0]);
  if (out.timed_out || out.too_long) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t reaped;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  if (out.timed_out || out.too_long) return out;
  if (reaped < 0) {
    out.how_it_ended = "the library's loading process could not be waited for";
    return out;
  }
  out.exited_cleanly = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  out.how_it_ended = describe(status);
  return out;
}

}  // namespace llm2hef::plugins
