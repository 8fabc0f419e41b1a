#include "llm2hef/core/hub/hub_id.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace llm2hef::core::hub {

namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// One part of ORG/NAME, as the Hub's validate_repo_id accepts it.
bool is_repo_part(std::string_view s) {
  if (s.empty() || s.size() > 96) return false;
  if (!std::all_of(s.begin(), s.end(), is_name_char)) return false;
  if (s.front() == '-' || s.front() == '.' || s.back() == '-' || s.back() == '.') return false;
  return s.find("--") == std::string_view::npos && s.find("..") == std::string_view::npos;
}

bool ends_with_gguf(const std::string& s) {
  if (s.size() < 5) return false;
  std::string tail = s.substr(s.size() - 5);
  for (char& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return tail == ".gguf";
}

// Every '/'-separated part non-empty and neither "." nor "..".
bool has_clean_parts(const std::string& s) {
  size_t start = 0;
  while (true) {
    const size_t end = std::min(s.find('/', start), s.size());
    const std::string_view part(s.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == s.size()) return true;
    start = end + 1;
  }
}

}  // namespace

bool is_safe_repo_path(const std::string& file) {
  if (file.empty() || file.size() > 1024) return false;
  for (char c : file)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  return has_clean_parts(file);
}

bool is_safe_revision(const std::string& revision) {
  if (revision.empty() || revision.size() > 256) return false;
  for (char c : revision)
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f || c == '\\') return false;
  return has_clean_parts(revision);
}

std::optional<HubId> parse_hub_id(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  HubId id;
  id.text = text;
  const std::string org = text.substr(0, slash);
  const size_t name_end = std::min(text.find_first_of("@/", slash + 1), text.size());
  const std::string name = text.substr(slash + 1, name_end - slash - 1);
  if (!is_repo_part(org) || !is_repo_part(name)) return std::nullopt;
  id.repo = org + "/" + name;
  std::string rest = text.substr(name_end);
  if (!rest.empty() && rest[0] == '@') {
    rest.erase(0, 1);
    // ORG/NAME@REV/FILE.gguf: the revision is the first part; otherwise all
    // of it is the revision (refs/pr/1).
    const size_t cut = rest.find('/');
    if (cut != std::string::npos && ends_with_gguf(rest)) {
      id.revision = rest.substr(0, cut);
      rest = rest.substr(cut);
    } else {
      id.revision = rest;
      rest.clear();
    }
    if (!is_safe_revision(id.revision)) return std::nullopt;
  }
  if (!rest.empty()) {  // "/PATH.gguf"
    id.file = rest.substr(1);
    if (!ends_with_gguf(id.file) || !is_safe_repo_path(id.file)) return std::nullopt;
  }
  return id;
}

}  // namespace llm2hef::core::hub
