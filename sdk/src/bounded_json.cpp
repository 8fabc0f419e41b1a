// One JSON parser for every file llm2hef reads. nlohmann's DOM parser is
// iterative, but a document nested thousands deep still overflows the stack
// later (destruction, dump, our own walkers), and its callback API, the only
// built-in hook for checks during the parse, is quadratic on large objects.
// A forwarding SAX handler checks depth and duplicate keys in one linear pass
// while nlohmann's own DOM builder does the building.
#include <string>
#include <unordered_set>
#include <vector>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

namespace {

using Json = nlohmann::json;
using DomBuilder = nlohmann::detail::json_sax_dom_parser<Json>;

class CheckedBuilder {
 public:
  CheckedBuilder(Json& root, const std::string& origin, const JsonLimits& limits)
      : dom_(root), origin_(origin), limits_(limits) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const Json::string_t& s) { return dom_.number_float(v, s); }
  bool string(Json::string_t& v) { return dom_.string(v); }
  bool binary(Json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) {
    enter();
    if (limits_.refuse_duplicate_keys) keys_.emplace_back();
    return dom_.start_object(n);
  }
  bool key(Json::string_t& k) {
    if (limits_.refuse_duplicate_keys && !keys_.back().insert(k).second)
      throw BadInput(origin_ + ": " + location() + "key '" + k + "' appears more than once");
    last_key_ = k;
    return dom_.key(k);
  }
  bool end_object() {
    leave();
    if (limits_.refuse_duplicate_keys) keys_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t n) {
    enter();
    return dom_.start_array(n);
  }
  bool end_array() {
    leave();
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& e) {
    return dom_.parse_error(position, token, e);
  }

 private:
  // Keys leading to the current container, so a message names where it is.
  void enter() {
    path_.push_back(std::move(last_key_));
    last_key_.clear();
    if (path_.size() > limits_.max_depth)
      throw BadInput(origin_ + ": " + location() + "values nested too deeply (more than " +
                     std::to_string(limits_.max_depth) + " levels; refused before they exhaust the stack)");
  }
  void leave() {
    path_.pop_back();
    last_key_.clear();
  }
  std::string location() const {
    std::string where;
    for (const auto& k : path_)
      if (!k.empty()) where += (where.empty() ? "'" : "/'") + k + "'";
    return where.empty() ? "" : "in " + where + ": ";
  }

  DomBuilder dom_;
  const std::string& origin_;
  const JsonLimits& limits_;
  std::vector<std::string> path_;
  std::string last_key_;
  std::vector<std::unordered_set<std::string>> keys_;
};

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw BadInput(origin + ": " + std::to_string(text.size()) + " bytes of JSON exceed the limit of " +
                   std::to_string(limits.max_bytes) + " bytes for this file");
  Json root;
  CheckedBuilder builder(root, origin, limits);
  try {
    Json::sax_parse(text.begin(), text.end(), &builder);
  } catch (const Json::parse_error& e) {
    throw BadInput(origin + ": not valid JSON: " + e.what());
  } catch (const Json::exception& e) {
    throw BadInput(origin + ": not valid JSON: " + e.what());
  }
  return root;
}

}  // namespace llm2hef::sdk
