#include "llm2hef/core/atomic_output.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <system_error>
#include <vector>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

fs::path make_temp_dir(const fs::path& target) {
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(parent))
    throw UsageError(target.string() + ": parent folder " + parent.string() + " does not exist");
  std::string templ = (parent / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw BadInput(parent.string() + ": cannot create a temporary folder");
  return fs::path(buf.data());
}

}  // namespace

AtomicDir::AtomicDir(fs::path target, bool replace) : target_(std::move(target)), replace_(replace) {
  if (target_.filename().empty()) target_ = target_.parent_path();
  if (fs::exists(target_) && !replace_)
    throw UsageError(target_.string() + ": already exists (pass --force to replace it)");
  staging_ = make_temp_dir(target_);
}

AtomicDir::~AtomicDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void AtomicDir::commit() {
  std::error_code ec;
  if (fs::exists(target_)) {
    if (!replace_) throw UsageError(target_.string() + ": appeared while exporting; not replaced");
    // Move the old one aside first so the target is never half old, half new.
    fs::path old = staging_.string() + ".old";
    fs::rename(target_, old, ec);
    if (ec) throw BadInput(target_.string() + ": cannot move the previous output aside: " + ec.message());
    fs::rename(staging_, target_, ec);
    if (ec) {
      fs::rename(old, target_);
      throw BadInput(target_.string() + ": cannot rename the new output into place: " + ec.message());
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(staging_, target_, ec);
    if (ec) throw BadInput(target_.string() + ": cannot rename the new output into place: " + ec.message());
  }
  committed_ = true;
}

void write_file_atomic(const fs::path& path, const std::string& contents) {
  fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::string templ = (parent / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) throw BadInput(path.string() + ": cannot create a temporary file next to it");
  ::close(fd);
  fs::path tmp(buf.data());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw BadInput(path.string() + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw BadInput(path.string() + ": cannot rename into place");
  }
}

}  // namespace llm2hef::core
