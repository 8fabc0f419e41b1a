// NAME[:TAG] and the default store, as hailo-ollama (MZG v5.1.1) sees them.
#include <cstdlib>
#include <sstream>
#include <string_view>

#include "llm2hef/core/package/package.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::package {

namespace fs = std::filesystem;

namespace {

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

// The server makes the key from the two folder names above manifest.json, so
// each part must be exactly one plain folder name (no '/', no '..', no ':'
// that would blur the key).
void require_folder_name(const std::string& part, const char* what, const std::string& whole) {
  if (part.empty() || part.size() > 128)
    throw UsageError("--model '" + whole + "': the " + what + " must have 1 to 128 characters");
  if (!is_alnum(part.front()))
    throw UsageError("--model '" + whole + "': the " + what + " must start with a letter or a digit");
  for (char c : part)
    if (!is_alnum(c) && c != '.' && c != '_' && c != '-')
      throw UsageError("--model '" + whole + "': the " + what +
                       " may hold only letters, digits, '.', '_' and '-'"
                       " (it becomes a folder name in the store)");
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

ModelRef parse_model_ref(const std::string& text) {
  ModelRef ref;
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    ref.name = text;
    ref.tag = kDefaultTag;
  } else {
    ref.name = text.substr(0, colon);
    ref.tag = text.substr(colon + 1);
    if (ref.tag.find(':') != std::string::npos) throw UsageError("--model '" + text + "': more than one ':'");
  }
  require_folder_name(ref.name, "name", text);
  require_folder_name(ref.tag, "tag", text);
  return ref;
}

fs::path default_store() {
  // utils/path.cpp: data_home() is $XDG_DATA_HOME when set and not empty,
  // else $HOME/.local/share; then $XDG_DATA_DIRS (default
  // /usr/share:/usr/local/share). apps/server/main.cpp find_dir() takes the
  // first candidate holding a `hailo-ollama` folder and uses its `models`.
  std::vector<fs::path> candidates;
  const std::string xdg_home = env_or_empty("XDG_DATA_HOME");
  candidates.push_back(!xdg_home.empty() ? fs::path(xdg_home) : fs::path(env_or_empty("HOME")) / ".local/share");
  std::string dirs = env_or_empty("XDG_DATA_DIRS");
  if (dirs.empty()) dirs = "/usr/share:/usr/local/share";
  std::stringstream split(dirs);
  for (std::string d; std::getline(split, d, ':');)
    if (!d.empty()) candidates.push_back(d);

  std::string looked;
  for (const fs::path& c : candidates) {
    std::error_code ec;
    if (fs::is_directory(c / "hailo-ollama", ec)) return c / "hailo-ollama" / "models";
    looked += (looked.empty() ? "" : ", ") + (c / "hailo-ollama").string();
  }
  // The first candidate is the user's own data folder, where hailo-ollama
  // looks first: named as searched ($XDG_DATA_HOME when set).
  throw UsageError("no hailo-ollama folder found (looked for " + looked +
                   "); pass --store DIR (the server's models folder), or create " +
                   (candidates.front() / "hailo-ollama").string());
}

}  // namespace llm2hef::core::package
