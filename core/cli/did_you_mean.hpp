// "Did you mean --cache?": the closest known name to a mistyped one.
// CLI11 refuses unknown arguments but suggests nothing, so the command line
// (core/cli/command_line.cpp) and the adapter-option check ask this.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::cli {

// Edits (insert, delete, substitute, swap two neighbours) between a and b:
// the optimal string alignment distance, so "cahce" is one edit from "cache".
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `typed`, if it is near enough to be a typo: at most
// one edit for names up to 5 characters, two for longer ones, and never as
// many edits as the name has characters (leading dashes not counted). Ties go
// to the first candidate.
std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& candidates);

}  // namespace llm2hef::cli
