#include "did_you_mean.hpp"

#include <algorithm>

namespace llm2hef::cli {

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

std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& candidates) {
  // Leading dashes do not count: "-q" is one character, and no typo of "-h".
  const std::size_t length = typed.size() - std::min(typed.find_first_not_of('-'), typed.size());
  const std::size_t allowed = std::min<std::size_t>(length <= 5 ? 1 : 2, length > 0 ? length - 1 : 0);
  std::optional<std::string> best;
  std::size_t best_distance = allowed + 1;
  for (const auto& candidate : candidates) {
    const std::size_t distance = edit_distance(typed, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace llm2hef::cli
