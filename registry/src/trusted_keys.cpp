#include "llm2hef/registry/trusted_keys.hpp"

#include <sys/stat.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "llm2hef/plugins/host.hpp"
#include "llm2hef/registry/temp_file.hpp"
#include "llm2hef/registry/user_dirs.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace fs = std::filesystem;

namespace llm2hef::registry {

namespace {

// A key anyone can write to, or a store anyone can add a key to, would let
// any local user make `registry install` accept an index they signed: the
// rule adapters follow (plugins/host.hpp), applied to the trust store. Even a
// sticky world-writable folder is refused: the danger is a new file, not a
// replaced one.
void refuse_if_world_writable(const fs::path& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || (st.st_mode & S_IWOTH) == 0) return;
  throw BadInput(path.string() + ": " + what +
                 " is writable by every user, so anyone could make llm2hef trust their key; not used (fix: chmod o-w " +
                 path.string() + ")");
}

std::vector<fs::path> key_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return out;
  refuse_if_world_writable(dir, "the trusted-keys folder");
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().extension() == ".pub" && it->is_regular_file()) out.push_back(it->path());
  if (ec) throw BadInput(dir.string() + ": cannot list the trusted keys: " + ec.message());
  for (const auto& f : out) {
    refuse_if_world_writable(f, "the trusted key file");
    // Owned by another user, or reached through a folder someone else may
    // write to: the rule adapters follow (plugins::replaceable_by_others).
    if (std::string fact = plugins::replaceable_by_others(f, "trusted key"); !fact.empty())
      throw BadInput(f.string() + ": " + fact +
                     ", so someone else could make llm2hef trust their key; not used (fix: give it and its folders "
                     "to yourself or root, writable by their owner only)");
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<TrustedKey> trusted_keys() {
  std::vector<TrustedKey> out;
  // One broken key file is not a reason to stop every registry command: it
  // trusts nothing, and says so. (A key anyone can write is another matter:
  // key_files refuses the whole store.)
  auto add = [&](const fs::path& dir, const char* origin) {
    for (const auto& f : key_files(dir)) {
      try {
        out.push_back({read_public_key(f), origin});
      } catch (const BadInput& e) {
        spdlog::warn("{} (not a public key; ignored, nothing it holds is trusted)", e.what());
      }
    }
  };
  add(trusted_key_dir(), "user");
  add(shipped_key_dir(), "shipped");
  return out;
}

std::vector<PublicKey> trusted_public_keys() {
  std::vector<PublicKey> out;
  for (auto& k : trusted_keys()) out.push_back(std::move(k.key));
  return out;
}

PublicKey add_trusted_key(const fs::path& file) {
  PublicKey key = read_public_key(file);
  for (const auto& t : trusted_keys())
    if (t.key.key_id == key.key_id)
      throw UsageError("key " + key.key_id + " is already trusted (" + t.origin + " key " + t.key.file.string() + ")");
  const fs::path dir = trusted_key_dir();
  CreatedFolders folders(create_folders(dir, "the trusted-keys folder"));
  const fs::path target = dir / (key.key_id + ".pub");
  // Written from the parsed key, not copied: the store holds only what was checked.
  write_new_file(target, public_key_json(key).dump(2) + "\n");
  folders.keep();
  key.file = target;
  return key;
}

void remove_trusted_key(const std::string& key_id) {
  for (const auto& t : trusted_keys()) {
    if (t.key.key_id != key_id) continue;
    if (t.origin != "user")
      throw UsageError("key " + key_id + " ships with llm2hef (" + t.key.file.string() +
                       "); it is not in the user's store and cannot be removed with `registry keys remove`");
    std::error_code ec;
    if (!fs::remove(t.key.file, ec) || ec)
      throw BadInput(t.key.file.string() + ": cannot remove: " + (ec ? ec.message() : "gone"));
    return;
  }
  throw UsageError("no trusted key has id '" + key_id + "' (`llm2hef registry keys list` shows them)");
}

}  // namespace llm2hef::registry
