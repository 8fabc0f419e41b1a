#include "llm2hef/core/hub/hub_settings.hpp"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::hub {

namespace fs = std::filesystem;

namespace {

// A variable set to the empty string counts as unset (huggingface_hub would
// take "" as a relative path, which is never what was meant).
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

fs::path expand_home(const std::string& p) {
  if (p == "~" || p.rfind("~/", 0) == 0)
    if (auto home = env("HOME")) return fs::path(*home) / p.substr(p.size() > 1 ? 2 : 1);
  return p;
}

bool is_true(const std::optional<std::string>& v) {
  if (!v) return false;
  std::string u = *v;
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u == "1" || u == "ON" || u == "YES" || u == "TRUE";
}

std::string trimmed(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

void check_token(const std::string& token, const std::string& origin) {
  for (char c : token)
    if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) == 0x7f)
      throw BadInput(origin + ": the Hugging Face token holds a space or a control character; not sent");
}

}  // namespace

HubSettings hub_settings_from_environment() {
  HubSettings s;
  s.endpoint = env("HF_ENDPOINT").value_or("https://huggingface.co");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.offline = is_true(env("HF_HUB_OFFLINE")) || is_true(env("TRANSFORMERS_OFFLINE"));

  fs::path hf_home;
  if (auto v = env("HF_HOME"))
    hf_home = expand_home(*v);
  else if (auto xdg = env("XDG_CACHE_HOME"))
    hf_home = fs::path(expand_home(*xdg)) / "huggingface";
  else
    hf_home = expand_home("~/.cache") / "huggingface";
  if (auto v = env("HF_HUB_CACHE"))
    s.cache = expand_home(*v);
  else if (auto legacy = env("HUGGINGFACE_HUB_CACHE"))
    s.cache = expand_home(*legacy);
  else
    s.cache = hf_home / "hub";

  if (auto t = env("HF_TOKEN")) {
    s.token = trimmed(*t);
    s.token_origin = "HF_TOKEN";
  } else {
    const fs::path file = env("HF_TOKEN_PATH") ? expand_home(*env("HF_TOKEN_PATH")) : hf_home / "token";
    std::error_code ec;
    std::ifstream in;
    if (fs::is_regular_file(file, ec)) in.open(file);  // never a FIFO or a device
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      if (std::string t = trimmed(text.str()); !t.empty()) {
        s.token = t;
        s.token_origin = file.string();
      }
    }
  }
  if (s.token) check_token(*s.token, s.token_origin);
  if (s.token && s.token->empty()) s.token.reset();
  return s;
}

fs::path repo_cache_dir(const fs::path& cache, const std::string& repo) {
  std::string folder = "models--" + repo;
  for (size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at)) folder.replace(at, 1, "--");
  return cache / folder;
}

}  // namespace llm2hef::core::hub
