// Comparing the claims a manifest or index entry lists with those a library
// reports, as sets: what `registry verify` and `registry install` both check
// (each words its own message).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace llm2hef::registry {

struct ClaimDifference {
  std::set<std::string> only_listed, only_reported;
  bool empty() const { return only_listed.empty() && only_reported.empty(); }
};

ClaimDifference claim_difference(const std::vector<std::string>& listed, const std::vector<std::string>& reported);

// "a, b, c" in set order.
std::string joined(const std::set<std::string>& items);

}  // namespace llm2hef::registry
