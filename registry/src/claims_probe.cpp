#include "llm2hef/registry/claims_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "llm2hef/plugins/loader.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::registry {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxReport = 1 << 20;  // info() of a real adapter is a few hundred bytes

void write_all(int fd, const std::string& text) {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<std::size_t>(w);
  }
}

// The child: default signals, no output, load, report, _exit (no atexit
// handlers or stdio buffers inherited from the host).
[[noreturn]] void run_child(const std::filesystem::path& library, int report_fd) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
  }
  json report;
  try {
    plugins::LoadedAdapter loaded = plugins::load_adapter(library);
    const auto& info = loaded.info();
    report = {{"loaded", true},
              {"name", info.name},
              {"version", info.version},
              {"architectures", info.architectures},
              {"model_types", info.model_types}};
  } catch (const plugins::PluginLoadError& e) {
    report = {{"loaded", false}, {"error", e.detail()}};
  } catch (const std::exception& e) {
    report = {{"loaded", false}, {"error", std::string("unexpected error while loading: ") + e.what()}};
  }
  // Written after the adapter was destroyed and unloaded: a destructor that
  // ends the process is caught too.
  write_all(report_fd, report.dump(-1, ' ', false, json::error_handler_t::replace));
  ::_exit(0);
}

std::string describe(int status) {
  if (WIFSIGNALED(status))
    return "the library killed its process while loading (signal " + std::to_string(WTERMSIG(status)) + ")";
  if (WIFEXITED(status))
    return "the library ended its process while loading (exit status " + std::to_string(WEXITSTATUS(status)) + ")";
  return "the library's loading process ended abnormally";
}

}  // namespace

ProbedClaims probe_claims(const std::filesystem::path& library, std::chrono::milliseconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw InternalError(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw InternalError(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(library, fds[1]);
  }
  ::close(fds[1]);

  std::string text;
  bool timed_out = false, too_long = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
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
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of the report
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxReport) {
      too_long = true;
      break;
    }
  }
  ::close(fds[0]);
  if (timed_out || too_long) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  ProbedClaims out;
  if (timed_out) {
    out.error = "the library did not finish loading within " + std::to_string(timeout.count()) +
                " ms (its loading process was killed)";
    return out;
  }
  if (too_long) {
    out.error = "the library reported more than " + std::to_string(kMaxReport) + " bytes of claims";
    return out;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty()) {
    out.error = describe(status);
    return out;
  }
  try {
    const json report = json::parse(text);
    out.loaded = report.at("loaded").get<bool>();
    if (!out.loaded) {
      out.error = report.at("error").get<std::string>();
      return out;
    }
    out.name = report.at("name").get<std::string>();
    out.version = report.at("version").get<std::string>();
    out.architectures = report.at("architectures").get<std::vector<std::string>>();
    out.model_types = report.at("model_types").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    out.loaded = false;
    out.error = std::string("the library's loading process sent an unreadable report: ") + e.what();
  }
  return out;
}

}  // namespace llm2hef::registry
