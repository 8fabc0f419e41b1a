#include "args.hpp"

#include <charconv>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::cli {

int64_t parse_int(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size())
    throw UsageError("--" + flag + ": expected an integer, got '" + text + "'");
  return v;
}

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& value_flags,
           const std::set<std::string>& switches, bool allow_extra) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "-") {
      positionals_.push_back(a);
      continue;
    }
    if (a == "--") {
      positionals_.insert(positionals_.end(), argv.begin() + static_cast<long>(i) + 1, argv.end());
      break;
    }
    std::string name = a.substr(a[1] == '-' ? 2 : 1);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (name == "o") name = "output";
    if (switches.count(name)) {
      if (inline_value) throw UsageError("--" + name + " takes no value");
      switches_set_.insert(name);
      continue;
    }
    const bool known = value_flags.count(name) > 0;
    if (!known && !allow_extra) throw UsageError("unknown option '" + a + "' (see --help)");
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else {
      if (i + 1 >= argv.size()) throw UsageError("option --" + name + " needs a value");
      value = argv[++i];
    }
    if (known)
      values_.emplace(name, value);
    else
      extras_[name] = value;
  }
}

bool Args::has(const std::string& flag) const { return switches_set_.count(flag) || values_.count(flag); }

std::optional<std::string> Args::get(const std::string& flag) const {
  auto range = values_.equal_range(flag);
  if (range.first == range.second) return std::nullopt;
  return std::prev(range.second)->second;  // last one wins
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> out;
  auto range = values_.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) out.push_back(it->second);
  return out;
}

std::string Args::require(const std::string& flag) const {
  auto v = get(flag);
  if (!v) throw UsageError("missing required option --" + flag);
  return *v;
}

int64_t Args::require_int(const std::string& flag) const { return parse_int(flag, require(flag)); }

std::optional<int64_t> Args::get_int(const std::string& flag) const {
  auto v = get(flag);
  if (!v) return std::nullopt;
  return parse_int(flag, *v);
}

}  // namespace llm2hef::cli
