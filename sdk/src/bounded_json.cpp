// One JSON parser for every file llm2hef reads. nlohmann's DOM parser is
// iterative, but a document nested thousands deep still overflows the stack
// later (destruction, dump, our own walkers), and its callback API, the only
// built-in hook for checks during the parse, is quadratic on large objects.
// A SAX handler checks depth, size and duplicate keys and builds the DOM in
// one linear pass, and only one copy of the document is ever built.
#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "llm2hef/sdk/errors.hpp"
#include "llm2hef/sdk/json_file.hpp"

namespace llm2hef::sdk {

namespace {

// Builds a DOM from SAX events. nlohmann's own builder inserts each object
// member with operator[], a linear search in ordered_json's vector-backed
// objects (quadratic on a 64,000-layer HN); this one appends to that vector
// directly, and leaves duplicate keys to CheckedBuilder.
template <class J>
class DomBuilder {
 public:
  explicit DomBuilder(J& root) : root_(root) {}

  template <class V>
  J* put(V&& value) {
    if (stack_.empty()) {
      root_ = J(std::forward<V>(value));
      return &root_;
    }
    J& top = *stack_.back();
    if (top.is_array()) {
      auto& items = top.template get_ref<typename J::array_t&>();
      items.emplace_back(std::forward<V>(value));
      return &items.back();
    }
    *slot_ = J(std::forward<V>(value));
    return slot_;
  }
  void key(std::string& k) {
    auto& members = stack_.back()->template get_ref<typename J::object_t&>();
    if constexpr (requires { typename J::object_t::Container; }) {  // ordered_map: a vector of members
      // Duplicates were refused by the caller; append in document order.
      using Vector = typename J::object_t::Container;
      auto& v = static_cast<Vector&>(members);
      v.emplace_back(std::move(k), nullptr);
      slot_ = &v.back().second;
    } else {
      slot_ = &members[std::move(k)];  // a repeated key: the last value wins, as in nlohmann
    }
  }
  void open(J&& container) { stack_.push_back(put(std::move(container))); }
  void close() { stack_.pop_back(); }

 private:
  J& root_;
  std::vector<J*> stack_;
  J* slot_ = nullptr;
};

template <class J>
class CheckedBuilder {
 public:
  CheckedBuilder(J& root, const std::string& origin, const JsonLimits& limits, bool keep_order,
                 const JsonPaths& dropped)
      : dom_(root),
        origin_(origin),
        limits_(limits),
        dropped_(dropped),
        check_keys_(limits.refuse_duplicate_keys || keep_order) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(typename J::number_integer_t v) { return value(v); }
  bool number_unsigned(typename J::number_unsigned_t v) { return value(v); }
  bool number_float(typename J::number_float_t v, const typename J::string_t&) { return value(v); }
  bool string(typename J::string_t& v) { return value(std::move(v)); }
  bool binary(typename J::binary_t& v) { return value(J::binary(std::move(v))); }
  bool start_object(std::size_t) {
    enter();
    if (check_keys_) keys_.emplace_back();
    open(J(nlohmann::detail::value_t::object));
    return true;
  }
  bool key(typename J::string_t& k) {
    if (check_keys_ && !keys_.back().insert(k).second)
      throw BadInput(origin_ + ": " + location() + "key '" + k + "' appears more than once");
    last_key_ = k;
    if (skip_from_ == 0) {
      drop_next_ = is_dropped(k);
      dom_.key(k);  // a dropped member stays, as null
    }
    return true;
  }
  bool end_object() {
    leave();
    if (check_keys_) keys_.pop_back();
    close();
    return true;
  }
  bool start_array(std::size_t) {
    enter();
    open(J(nlohmann::detail::value_t::array));
    return true;
  }
  bool end_array() {
    leave();
    close();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw BadInput(origin_ + ": not valid JSON: " + e.what());
  }

 private:
  template <class V>
  bool value(V&& v) {
    if (skip_from_ == 0 && !std::exchange(drop_next_, false)) dom_.put(std::forward<V>(v));
    return true;
  }
  // A dropped member's container is parsed (syntax, depth and keys are
  // still checked) but never built: skip_from_ is its depth until it closes.
  void open(J&& container) {
    if (skip_from_ != 0) return;
    if (std::exchange(drop_next_, false)) {
      skip_from_ = path_.size();
      return;
    }
    dom_.open(std::move(container));
  }
  void close() {
    if (skip_from_ == 0)
      dom_.close();
    else if (path_.size() + 1 == skip_from_)
      skip_from_ = 0;
  }
  // Whether the member `k` of the current container is on a dropped path.
  bool is_dropped(const std::string& k) const {
    for (const auto& p : dropped_) {
      if (p.size() != path_.size()) continue;  // path_[0] is the root's (empty) key
      bool match = true;
      for (size_t i = 0; i + 1 < p.size() && match; ++i) match = p[i] == "*" || p[i] == path_[i + 1];
      if (match && (p.back() == "*" || p.back() == k)) return true;
    }
    return false;
  }
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

  DomBuilder<J> dom_;
  const std::string& origin_;
  const JsonLimits& limits_;
  const JsonPaths& dropped_;
  const bool check_keys_;
  bool drop_next_ = false;  // the next value belongs to a dropped member
  size_t skip_from_ = 0;    // depth of the dropped container being skipped, 0 when none
  std::vector<std::string> path_;
  std::string last_key_;
  std::vector<std::unordered_set<std::string>> keys_;
};

template <class J>
J parse_checked(std::string_view text, const std::string& origin, const JsonLimits& limits, bool keep_order,
                const JsonPaths& dropped = {}) {
  if (text.size() > limits.max_bytes) throw BadInput(origin + ": " + limits.too_big(text.size()));
  // nlohmann's lexer ends the document at a NUL byte and ignores the rest;
  // JSON text never holds one (strings escape it as \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    throw BadInput(origin + ": not valid JSON: a NUL byte at offset " + std::to_string(nul) +
                   " (JSON text cannot contain one; is the file truncated or padded?)");
  J root;
  CheckedBuilder<J> builder(root, origin, limits, keep_order, dropped);
  try {
    J::sax_parse(text.begin(), text.end(), &builder);
  } catch (const nlohmann::json::exception& e) {
    throw BadInput(origin + ": not valid JSON: " + e.what());
  }
  return root;
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& origin, const JsonLimits& limits) {
  return parse_checked<nlohmann::json>(text, origin, limits, false);
}

nlohmann::json parse_json_without(std::string_view text, const std::string& origin, const JsonPaths& dropped,
                                  const JsonLimits& limits) {
  return parse_checked<nlohmann::json>(text, origin, limits, false, dropped);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& origin, const JsonLimits& limits) {
  return parse_checked<nlohmann::ordered_json>(text, origin, limits, true);
}

}  // namespace llm2hef::sdk
