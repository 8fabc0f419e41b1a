#include "llm2hef/core/checkpoint/checkpoint_files.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "llm2hef/core/io/regular_file.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// Whether `path` is `folder` or lies under it (both with links resolved).
bool lies_in(const fs::path& path, const fs::path& folder) {
  auto [f, p] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return f == folder.end() || (std::next(f) == folder.end() && f->empty());  // "a/b/" is "a/b"
}

}  // namespace

std::optional<fs::path> hf_cache_repository(const fs::path& real_dir) {
  const fs::path snapshots = real_dir.parent_path(), repo = snapshots.parent_path();
  if (snapshots.filename() == "snapshots" && repo.filename().string().rfind("models--", 0) == 0) return repo;
  return std::nullopt;
}

fs::path checkpoint_bounds(const fs::path& dir) {
  std::error_code ec;
  fs::path real = fs::weakly_canonical(dir, ec);
  if (ec) real = fs::absolute(dir).lexically_normal();
  return hf_cache_repository(real).value_or(real);
}

bool checkpoint_has_file(const fs::path& dir, const fs::path& file) {
  if (!is_present_file(file)) return false;
  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  if (ec) return true;  // gone meanwhile: opening it says so, naming it
  const fs::path bounds = checkpoint_bounds(dir);
  if (lies_in(real, bounds)) return true;
  const bool linked = fs::is_symlink(fs::symlink_status(file, ec));
  throw BadInput(file.string() + ": " + (linked ? "a symbolic link to " : "behind a symbolic link, leads to ") +
                 real.string() + ", outside the checkpoint folder " + bounds.string() +
                 "; llm2hef reads only a checkpoint's own files (what it reads ends up in the export). Copy the "
                 "file into the folder in place of the link if it belongs to the model");
}

}  // namespace llm2hef::core
