// A small command-line parser: flags with values, switches, positionals.
// Enough for llm2hef's subcommands without another dependency.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace llm2hef::cli {

class Args {
 public:
  // `value_flags` take a value (`--cache 64` or `--cache=64`); `switches` do not.
  // Unknown `--name value` pairs are kept as extras when `allow_extra` (adapter options).
  Args(const std::vector<std::string>& argv, const std::set<std::string>& value_flags,
       const std::set<std::string>& switches, bool allow_extra = false);

  bool has(const std::string& flag) const;
  std::optional<std::string> get(const std::string& flag) const;
  std::vector<std::string> all(const std::string& flag) const;  // repeated flags
  std::string require(const std::string& flag) const;           // UsageError when missing
  int64_t require_int(const std::string& flag) const;
  std::optional<int64_t> get_int(const std::string& flag) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  const std::map<std::string, std::string>& extras() const { return extras_; }

 private:
  std::multimap<std::string, std::string> values_;
  std::set<std::string> switches_set_;
  std::vector<std::string> positionals_;
  std::map<std::string, std::string> extras_;
};

int64_t parse_int(const std::string& flag, const std::string& text);

}  // namespace llm2hef::cli
