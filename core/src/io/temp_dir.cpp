#include "llm2hef/core/io/temp_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "llm2hef/core/io/staging.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// The folder as the user would look for it: "TMPDIR=/x" when it came from
// the environment, "/tmp (TMPDIR is not set)" otherwise.
struct Root {
  fs::path path;
  bool from_env = false;

  std::string named() const {
    return from_env ? "TMPDIR=" + path.string() : path.string() + " (the temporary folder; TMPDIR is not set)";
  }
  [[noreturn]] void refuse(const std::string& why) const {
    throw BadInput(named() + ": " + why + "; point TMPDIR at a writable folder");
  }
};

Root root_from_env() {
  const char* env = std::getenv("TMPDIR");
  if (env == nullptr || *env == '\0') return {"/tmp", false};
  return {fs::path(env), true};
}

Root checked_root() {
  Root r = root_from_env();
  struct stat st {};
  if (::stat(r.path.c_str(), &st) != 0) r.refuse(std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) r.refuse("not a folder");
  if (::access(r.path.c_str(), W_OK | X_OK) != 0) r.refuse(std::string("not writable: ") + std::strerror(errno));
  std::error_code ec;
  const fs::path abs = fs::absolute(r.path, ec);
  if (!ec) r.path = abs;  // the signal watcher removes it whatever the working folder is by then
  return r;
}

}  // namespace

fs::path temp_root() { return checked_root().path; }

ScratchDir::ScratchDir(const std::string& prefix) {
  const Root root = checked_root();
  sweep_stale_scratch(root.path, prefix);  // a killed run's (SIGKILL, the OOM killer)
  path_ = create_staging([&] {
    std::string templ = (root.path / (prefix + "XXXXXX")).string();
    if (!::mkdtemp(templ.data())) root.refuse(std::string("cannot create a folder in it: ") + std::strerror(errno));
    fd_ = ::open(templ.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      ::rmdir(templ.c_str());
      root.refuse("cannot open the folder " + templ + " it made: " + std::strerror(err));
    }
    return fs::path(templ);
  });
  lock_staging(fd_);  // a fresh folder: nobody else can hold it
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
  unregister_staging(path_);
  ::close(fd_);
}

fs::path ScratchDir::write(const std::string& name, std::string_view bytes) const {
  const fs::path file = path_ / name;
  const Root root = root_from_env();
  const auto refuse = [&](int err) { root.refuse("cannot write " + file.string() + ": " + std::strerror(err)); };
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) refuse(errno);
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      refuse(err);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  if (::close(fd) != 0) refuse(errno);
  return file;
}

}  // namespace llm2hef::core
