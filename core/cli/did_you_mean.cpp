#include "did_you_mean.hpp"

#include <algorithm>

#include "llm2hef/core/io/near_miss.hpp"

namespace llm2hef::cli {

std::size_t edit_distance(std::string_view a, std::string_view b) { return core::edit_distance(a, b); }

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
