// "Did you mean ...?" for a path that does not exist: the sibling whose name
// is a likely typo of it (another case, or an edit or two away). Every
// "no such file/folder" message adds it, so a near-miss is never a dead end.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace llm2hef::core {

// Edits (insert, delete, substitute, swap two neighbours) between a and b:
// the optimal string alignment distance, so "cahce" is one edit from "cache".
std::size_t edit_distance(std::string_view a, std::string_view b);

// The entry of `missing`'s folder nearest to its name, when that folder
// exists and an entry is near enough to be a typo: the same name in another
// case, or at most one edit for names up to 5 characters and two for longer
// ones (never as many as the name has). Looks at the first 4096 entries only.
std::optional<std::filesystem::path> near_miss(const std::filesystem::path& missing);

// " (did you mean PATH?)" for near_miss(missing), else "".
std::string did_you_mean_suffix(const std::filesystem::path& missing);

}  // namespace llm2hef::core
