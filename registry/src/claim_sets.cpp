#include "llm2hef/registry/claim_sets.hpp"

#include <algorithm>
#include <iterator>

namespace llm2hef::registry {

ClaimDifference claim_difference(const std::vector<std::string>& listed, const std::vector<std::string>& reported) {
  const std::set<std::string> claimed(listed.begin(), listed.end()), actual(reported.begin(), reported.end());
  ClaimDifference d;
  std::set_difference(claimed.begin(), claimed.end(), actual.begin(), actual.end(),
                      std::inserter(d.only_listed, d.only_listed.end()));
  std::set_difference(actual.begin(), actual.end(), claimed.begin(), claimed.end(),
                      std::inserter(d.only_reported, d.only_reported.end()));
  return d;
}

std::string joined(const std::set<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

}  // namespace llm2hef::registry
