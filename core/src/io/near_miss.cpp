#include "llm2hef/core/io/near_miss.hpp"

#include <algorithm>
#include <cctype>
#include <system_error>
#include <vector>

namespace llm2hef::core {

namespace fs = std::filesystem;

namespace {

// A folder can hold millions of entries; a hint is not worth reading them all.
constexpr int kMaxEntries = 4096;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: edits between the first i characters of a and the first j of b.
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t substitute = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

std::optional<fs::path> near_miss(const fs::path& missing) {
  fs::path p = missing;
  while (!p.empty() && !p.has_filename()) p = p.parent_path();  // "dir/" names dir
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") return std::nullopt;
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  std::error_code ec;
  fs::directory_iterator it(parent, ec);
  if (ec) return std::nullopt;
  // Names too long to be typed are not compared (the distance is quadratic).
  if (name.size() > 255) return std::nullopt;
  const std::size_t allowed = std::min<std::size_t>(name.size() <= 5 ? 1 : 2, name.size() - 1);
  std::vector<std::string> entries;
  for (int seen = 0; it != fs::directory_iterator() && seen < kMaxEntries; it.increment(ec), ++seen) {
    if (ec) break;
    entries.push_back(it->path().filename().string());
  }
  std::sort(entries.begin(), entries.end());  // ties go to the first name, whatever the folder's order
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const std::string& e : entries) {
    if (e == name || e.size() > 255) continue;
    const std::size_t distance = lower(e) == lower(name) ? 0 : edit_distance(name, e);
    if (distance < best_distance) best = e, best_distance = distance;
  }
  if (!best) return std::nullopt;
  return p.has_parent_path() ? parent / *best : fs::path(*best);
}

std::string did_you_mean_suffix(const fs::path& missing) {
  const std::optional<fs::path> near = near_miss(missing);
  return near ? " (did you mean " + near->string() + "?)" : std::string();
}

}  // namespace llm2hef::core
