#include "llm2hef/core/chat/older_minja.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/core/chat/template_edits.hpp"

namespace llm2hef::core::jinja {

namespace {

constexpr size_t kNone = static_cast<size_t>(-1);
constexpr size_t kMaxOperandSteps = 64;    // attributes, subscripts and calls in one operand
constexpr size_t kMaxOperandTokens = 256;  // tokens in one operand a rewrite copies

// Jinja keywords that never end an operand: a bracket after one opens a
// literal or a parenthesized expression, not a call or a subscript.
bool is_keyword(std::string_view name) {
  static const std::unordered_set<std::string_view> kKeywords = {"and", "or",    "not",     "in",      "is",
                                                                 "if",  "elif",  "else",    "for",     "recursive",
                                                                 "set", "with",  "macro",   "call",    "filter",
                                                                 "do",  "print", "import",  "include", "from",
                                                                 "as",  "block", "extends", "endset"};
  return kKeywords.count(name) != 0;
}

// One construct the older minja lacks, with its rewrite when it has one.
struct Item {
  OlderMinjaFinding finding;
  size_t at = 0;                          // offset of the construct, for messages and overlaps
  size_t cover_begin = 0, cover_end = 0;  // the template text the rewrite replaces
  std::vector<Replacement> edits;         // empty: not rewritable
};

// The tokens of one code segment, with each bracket's partner.
class Code {
 public:
  Code(std::string_view tmpl, const Segment& seg, const std::string& origin)
      : tokens(tokenize(tmpl, seg, origin)),
        close_of(tokens.size(), kNone),
        open_of(tokens.size(), kNone),
        tmpl_(tmpl) {
    std::vector<size_t> open;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (op(i, "(") || op(i, "[") || op(i, "{")) {
        open.push_back(i);
      } else if ((op(i, ")") || op(i, "]") || op(i, "}")) && !open.empty()) {
        close_of[open.back()] = i;
        open_of[i] = open.back();
        open.pop_back();
      }
    }
  }

  std::string_view text(size_t i) const { return i < tokens.size() ? text_of(tmpl_, tokens[i]) : std::string_view(); }
  bool op(size_t i, std::string_view o) const {
    return i < tokens.size() && tokens[i].kind == TokenKind::op && text(i) == o;
  }
  bool name(size_t i, std::string_view n) const {
    return i < tokens.size() && tokens[i].kind == TokenKind::name && text(i) == n;
  }
  // A token an operand may end with: a value, or a closing bracket.
  bool ends_operand(size_t i) const {
    const Token& t = tokens[i];
    if (t.kind == TokenKind::name) return !is_keyword(text(i));
    if (t.kind == TokenKind::string || t.kind == TokenKind::number) return true;
    return op(i, ")") || op(i, "]") || op(i, "}");
  }
  // The source text of tokens [first, last].
  std::string_view source(size_t first, size_t last) const {
    return tmpl_.substr(tokens[first].begin, tokens[last].end - tokens[first].begin);
  }

  // The first token of the operand (a value, a bracketed expression or
  // literal, then attributes, subscripts and calls) that ends at `last`;
  // kNone when `last` ends none, or the operand is a filter's or a test's name.
  size_t operand_start(size_t last) const {
    size_t j = last;
    // Bounded, so that a chain of calls on calls (`x.startswith('a').startswith('b')...`, each
    // walking back over the ones before) stays linear: no template needs longer operands.
    for (size_t steps = 0; steps < kMaxOperandSteps; ++steps) {
      size_t atom = j;
      if (op(j, ")") || op(j, "]") || op(j, "}")) {
        atom = open_of[j];
        if (atom == kNone) return kNone;
        // `f(...)`, `x[...]`: a call or subscript of what comes before.
        if (!op(j, "}") && atom > 0 && ends_operand(atom - 1)) {
          j = atom - 1;
          continue;
        }
      } else if (!ends_operand(j)) {
        return kNone;
      }
      if (atom >= 2 && op(atom - 1, ".") && tokens[atom].kind != TokenKind::op) {
        j = atom - 2;  // an attribute of what comes before
        continue;
      }
      if (atom > 0 && (op(atom - 1, "|") || op(atom - 1, ".") || name(atom - 1, "is"))) return kNone;
      return atom;
    }
    return kNone;
  }

  // One past the last token of the operand that starts at `first`; kNone
  // when none starts there. `calls`: whether it calls anything.
  size_t operand_end(size_t first, bool& calls) const {
    if (first >= tokens.size()) return kNone;
    size_t j = first;
    if (op(j, "(") || op(j, "[") || op(j, "{")) {
      j = close_of[j];
      if (j == kNone) return kNone;
    } else if (!ends_operand(j) || tokens[j].kind == TokenKind::op) {
      return kNone;
    }
    while (true) {
      if (op(j + 1, ".") && j + 2 < tokens.size() && tokens[j + 2].kind != TokenKind::op) {
        j += 2;
      } else if ((op(j + 1, "[") || op(j + 1, "(")) && close_of[j + 1] != kNone) {
        j = close_of[j + 1];
      } else {
        break;
      }
    }
    if (j - first >= kMaxOperandTokens) return kNone;  // bounded, as operand_start
    calls = false;
    for (size_t k = first + 1; k <= j && !calls; ++k) calls = op(k, "(") && ends_operand(k - 1);
    return j + 1;
  }

  std::vector<Token> tokens;
  std::vector<size_t> close_of, open_of;

 private:
  std::string_view tmpl_;
};

// A string literal whose escapes jinja2 and minja decode alike (only n, r,
// t, a backslash and the quotes after a backslash): its value, or nothing.
std::optional<std::string> plain_literal(std::string_view tmpl, const Token& t) {
  if (t.kind != TokenKind::string) return std::nullopt;
  const std::string_view raw = text_of(tmpl, t);
  for (size_t i = 1; i + 1 < raw.size(); ++i) {
    if (raw[i] != '\\') continue;
    const char e = raw[++i];
    if (e != 'n' && e != 'r' && e != 't' && e != '\\' && e != '\'' && e != '"') return std::nullopt;
  }
  return string_value(tmpl, t);
}

bool is_ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// At most this much of a construct's source is quoted in a message.
std::string quoted_source(std::string_view s, char quote = '\'') {
  constexpr size_t kMax = 48;
  return quote + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "..." : "") + quote;
}

// Finds every construct, in one pass over the template.
class Scanner {
 public:
  Scanner(std::string_view tmpl, const std::string& origin) : tmpl_(tmpl), origin_(origin), lines_(tmpl) {}

  std::vector<Item> scan() {
    const std::vector<Segment> segments = split(tmpl_, origin_);
    // Names the rewrites must not take.
    for (const Segment& seg : segments)
      if (is_code(seg)) taken_names(Code(tmpl_, seg, origin_));
    for (const Segment& seg : segments)
      if (is_code(seg)) segment(seg, Code(tmpl_, seg, origin_));
    drop_overlapping_rewrites();
    return std::move(items_);
  }

 private:
  static bool is_code(const Segment& s) {
    return s.kind == SegmentKind::expression || s.kind == SegmentKind::statement;
  }

  void taken_names(const Code& c) {
    for (size_t i = 0; i < c.tokens.size(); ++i)
      if (c.tokens[i].kind == TokenKind::name && c.text(i).substr(0, 8) == "llm2hef_") taken_.emplace(c.text(i));
  }

  // A fresh pair of names for a reversed loop.
  std::pair<std::string, std::string> fresh_names() {
    while (true) {
      const std::string k = std::to_string(++counter_);
      std::string list = "llm2hef_reversed_" + k, index = "llm2hef_index_" + k;
      if (!taken_.count(list) && !taken_.count(index)) return {list, index};
    }
  }

  Item& add(size_t at, std::string construct) {
    Item item;
    item.at = at;
    item.finding.construct = std::move(construct);
    item.finding.at = lines_.where(at);
    items_.push_back(std::move(item));
    return items_.back();
  }

  void rewrite(Item& item, size_t cover_begin, size_t cover_end, std::vector<Replacement> edits) {
    item.cover_begin = cover_begin;
    item.cover_end = cover_end;
    item.edits = std::move(edits);
    item.finding.rewritable = true;
  }

  void segment(const Segment& seg, const Code& c) {
    const bool statement = seg.kind == SegmentKind::statement;
    const bool is_for = statement && c.name(0, "for");
    if (statement && c.name(0, "endfor") && !fors_.empty()) fors_.pop_back();
    size_t for_in = kNone;  // the `in` of a for statement
    if (is_for)
      for (size_t i = 1; i < c.tokens.size() && for_in == kNone; ++i)
        if (c.name(i, "in")) for_in = i;
    reversed_loop_ = kNone;
    for (size_t i = 0; i < c.tokens.size(); ++i) {
      if (c.op(i, "[") && i > 0 && c.ends_operand(i - 1) && c.close_of[i] != kNone) {
        subscript(seg, c, i, is_for ? for_in : kNone);
      } else if (c.op(i, ".") && (c.name(i + 1, "startswith") || c.name(i + 1, "replace")) && c.op(i + 2, "(")) {
        method(c, i);
      } else if (c.name(i, "is")) {
        boolean_test(c, i);
      } else if (c.name(i, "in") && i != for_in) {
        substring_test(c, i);
      } else if (c.name(i, "loop") && c.op(i + 1, ".") && (c.name(i + 2, "previtem") || c.name(i + 2, "nextitem")) &&
                 !fors_.empty() && fors_.back() != kNone) {
        // The loop rewritten over indices would give indices here.
        Item& reversed = items_[fors_.back()];
        reversed.edits.clear();
        reversed.finding.rewritable = false;
        reversed.finding.construct += " (its body reads loop." + std::string(c.text(i + 2)) + ")";
        fors_.back() = kNone;
      }
    }
    if (is_for) fors_.push_back(reversed_loop_);
  }

  // A subscript `[...]` at token `open`: a slice the older minja does not
  // parse, or nothing.
  void subscript(const Segment& seg, const Code& c, size_t open, size_t for_in) {
    const size_t close = c.close_of[open];
    std::vector<size_t> colons;
    for (size_t k = open + 1; k < close; ++k) {
      if (c.close_of[k] != kNone) {
        k = c.close_of[k];
      } else if (c.op(k, ":")) {
        colons.push_back(k);
      }
    }
    const std::string text = quoted_source(c.source(open, close));
    const bool no_bounds =
        colons.size() >= 1 && colons[0] == open + 1 && (colons.size() == 1 ? close == open + 2 : colons[1] == open + 2);
    if (colons.size() == 1) {
      if (!no_bounds) return;  // [a:b], [a:], [:b]: the older minja has them
      Item& item = add(c.tokens[open].begin, "the slice " + text + " (a slice without bounds)");
      rewrite(item, c.tokens[open].begin, c.tokens[close].end, {{c.tokens[open].begin, c.tokens[close].end, "[0:]"}});
      return;
    }
    if (colons.size() != 2) return;
    const size_t step_first = colons[1] + 1;
    Item& item = add(c.tokens[open].begin, "the slice " + text + " (a slice with a step)");
    if (step_first == close || (step_first + 1 == close && c.text(step_first) == "1")) {
      // No step, or 1: the same slice without one.
      if (no_bounds)
        rewrite(item, c.tokens[open].begin, c.tokens[close].end, {{c.tokens[open].begin, c.tokens[close].end, "[0:]"}});
      else
        rewrite(item, c.tokens[open].begin, c.tokens[close].end,
                {{c.tokens[colons[1]].begin, c.tokens[close].begin, ""}});
      return;
    }
    const bool reverse = no_bounds && c.op(step_first, "-") && step_first + 2 == close && c.text(step_first + 1) == "1";
    // `for NAME in E[::-1]`, the slice ending the statement, E one operand.
    const bool whole_iterable = reverse && for_in == 2 && c.tokens[1].kind == TokenKind::name &&
                                close + 1 == c.tokens.size() && open > 3 && c.operand_start(open - 1) == 3;
    if (!whole_iterable) {
      item.finding.construct += reverse ? "; rewritten only as the whole iterable of a for loop over one name, "
                                          "without a loop filter or 'recursive'"
                                        : "";
      return;
    }
    const auto [list, index] = fresh_names();
    const std::string left = seg.left_mark ? std::string(1, seg.left_mark) : std::string();
    const std::string right = seg.right_mark ? std::string(1, seg.right_mark) : std::string();
    const std::string target(c.text(1));
    rewrite(item, c.tokens[3].begin, c.tokens[close].end,
            {{seg.begin, seg.begin, "{%" + left + " set " + list + " = " + std::string(c.source(3, open - 1)) + " %}"},
             {c.tokens[1].begin, c.tokens[close].end, index + " in range((" + list + "|length) - 1, -1, -1)"},
             {seg.end, seg.end, "{% set " + target + " = " + list + "[" + index + "] " + right + "%}"}});
    item.finding.construct = "the loop 'for " + target + " in ...[::-1]' (a slice with a step)";
    reversed_loop_ = items_.size() - 1;
  }

  // `.startswith(...)` or `.replace(...)` at the dot `dot`.
  void method(const Code& c, size_t dot) {
    const std::string m(c.text(dot + 1));
    const size_t open = dot + 2, close = c.close_of[open];
    Item& item = add(c.tokens[dot + 1].begin, "the string method '" + m + "'");
    if (m != "startswith") return;
    const std::optional<std::string> prefix =
        close == open + 2 ? plain_literal(tmpl_, c.tokens[open + 1]) : std::optional<std::string>();
    const size_t start = dot > 0 ? c.operand_start(dot - 1) : kNone;
    const bool more_postfix = c.op(close + 1, ".") || c.op(close + 1, "[") || c.op(close + 1, "(");
    if (!prefix || !is_ascii(*prefix) || start == kNone || more_postfix) {
      item.finding.construct += " (rewritten only when its argument is one ASCII string literal)";
      return;
    }
    // minja slices a string by bytes, jinja2 by characters: for an ASCII
    // prefix both compare the same leading characters.
    rewrite(item, c.tokens[start].begin, c.tokens[close].end,
            {{c.tokens[start].begin, c.tokens[close].end,
              "(" + std::string(c.source(start, dot - 1)) + "[:" + std::to_string(prefix->size()) +
                  "] == " + std::string(c.text(open + 1)) + ")"}});
  }

  // `x is true`, `x is false` (and `is not`) at the `is` token: the older
  // minja has the test `boolean`, and jinja2's `true` is `value is True`.
  void boolean_test(const Code& c, size_t is) {
    const bool negated = c.name(is + 1, "not");
    const size_t t = negated ? is + 2 : is + 1;
    std::string_view value;
    for (std::string_view v : {"true", "false", "True", "False"})
      if (c.name(t, v)) value = v;
    if (value.empty()) return;
    Item& item = add(c.tokens[is].begin, "the test 'is " + std::string(value) + "'");
    const size_t start = is > 0 ? c.operand_start(is - 1) : kNone;
    bool calls = true;
    if (start != kNone) c.operand_end(start, calls);
    if (start == kNone || calls) {
      item.finding.construct += " (rewritten only after an operand that calls nothing)";
      return;
    }
    const std::string x(c.source(start, is - 1));
    const std::string test =
        "(" + x + " is boolean and " + (value[0] == 't' || value[0] == 'T' ? "" : "not ") + x + ")";
    rewrite(item, c.tokens[start].begin, c.tokens[t].end,
            {{c.tokens[start].begin, c.tokens[t].end, negated ? "(not " + test + ")" : test}});
  }

  // `'lit' in B` or `'lit' not in B` at the `in` token: the older minja's
  // `in` is false for every string B, and its `not in` true for every mapping.
  void substring_test(const Code& c, size_t in) {
    const bool negated = in > 0 && c.name(in - 1, "not");
    if (in < (negated ? 2u : 1u)) return;
    const size_t lit = negated ? in - 2 : in - 1;
    if (c.tokens[lit].kind != TokenKind::string) return;  // only a literal says a substring is meant
    if (!negated && c.op(in + 1, "[")) return;            // a list literal: membership, which it has
    bool calls = false;
    const size_t end = c.operand_end(in + 1, calls);
    if (end != kNone && is_rewritten_form(c, in + 1, end)) return;
    Item& item = add(c.tokens[lit].begin, "the test " + quoted_source(c.source(lit, end == kNone ? in : end - 1), '"') +
                                              " (a test of 'in' with a string literal on its left)");
    const std::optional<std::string> value = plain_literal(tmpl_, c.tokens[lit]);
    auto among = [&](size_t i, std::initializer_list<std::string_view> set) {
      for (std::string_view s : set)
        if (c.text(i) == s) return true;
      return false;
    };
    const bool before_ok =
        lit == 0 || among(lit - 1, {"(", "[", "{", ",", ":", "=", "and", "or", "not", "if", "elif", "else"});
    const bool after_ok =
        end == c.tokens.size() || (end != kNone && among(end, {")", "]", "}", ",", ":", "and", "or", "if", "else"}));
    if (end == kNone || calls || !value || value->empty() || !before_ok || !after_ok) {
      item.finding.construct +=
          "; rewritten only with a non-empty literal on the left and, on the right, one operand that calls nothing";
      return;
    }
    const std::string literal(c.text(lit)), operand(c.source(in + 1, end - 1));
    const std::string test = literal + " in " + operand + " if " + operand + " is not string else (" + operand +
                             ".split(" + literal + ")|length) > 1";
    rewrite(item, c.tokens[lit].begin, c.tokens[end - 1].end,
            {{c.tokens[lit].begin, c.tokens[end - 1].end, negated ? "(not (" + test + "))" : "(" + test + ")"}});
  }

  // Whether tokens [first, end) are followed by `if` and the same tokens,
  // then `is not string else`: the form substring_test writes.
  static bool is_rewritten_form(const Code& c, size_t first, size_t end) {
    const size_t n = end - first;
    if (!c.name(end, "if") || end + 1 + n + 4 > c.tokens.size()) return false;
    for (size_t k = 0; k < n; ++k)
      if (c.text(first + k) != c.text(end + 1 + k)) return false;
    const size_t t = end + 1 + n;
    return c.name(t, "is") && c.name(t + 1, "not") && c.name(t + 2, "string") && c.name(t + 3, "else");
  }

  // A rewrite that would replace another construct's text is not made: the
  // inner one may be rewritten, the outer stays a finding.
  void drop_overlapping_rewrites() {
    std::vector<size_t> ats;
    for (const Item& it : items_) ats.push_back(it.at);  // in template order
    std::sort(ats.begin(), ats.end());
    for (Item& it : items_) {
      if (it.edits.empty()) continue;
      const auto from = std::lower_bound(ats.begin(), ats.end(), it.cover_begin);
      const auto inner = std::find_if(from, ats.end(), [&](size_t a) { return a != it.at; });
      if (inner != ats.end() && *inner < it.cover_end) {
        it.edits.clear();
        it.finding.rewritable = false;
        it.finding.construct += " (not rewritten: it holds another construct the older minja lacks)";
      }
    }
  }

  std::string_view tmpl_;
  const std::string& origin_;
  LineIndex lines_;
  std::vector<Item> items_;
  std::vector<size_t> fors_;      // the open for loops: each its reversed-loop item, or kNone
  size_t reversed_loop_ = kNone;  // the statement being scanned: its reversed-loop item
  std::unordered_set<std::string> taken_;
  size_t counter_ = 0;
};

}  // namespace

std::vector<OlderMinjaFinding> older_minja_findings(std::string_view tmpl, const std::string& origin) {
  std::vector<OlderMinjaFinding> out;
  for (Item& it : Scanner(tmpl, origin).scan()) out.push_back(std::move(it.finding));
  return out;
}

std::vector<std::string> older_minja_summary(const std::vector<OlderMinjaFinding>& findings) {
  std::vector<std::string> order;
  std::unordered_map<std::string, std::pair<std::string, size_t>> first;  // construct: place, others
  for (const OlderMinjaFinding& f : findings) {
    auto [it, fresh] = first.try_emplace(f.construct, f.at, 0);
    if (fresh)
      order.push_back(f.construct);
    else
      ++it->second.second;
  }
  std::vector<std::string> out;
  for (const std::string& c : order) {
    const auto& [at, more] = first.at(c);
    out.push_back(at + ": " + c + (more ? " (and at " + std::to_string(more) + " more places)" : std::string()));
  }
  return out;
}

std::string rewrite_for_older_minja(std::string_view tmpl, const std::string& origin,
                                    std::vector<OlderMinjaFinding>& rewritten, std::vector<OlderMinjaFinding>& left) {
  std::vector<Replacement> edits;
  for (Item& it : Scanner(tmpl, origin).scan()) {
    if (it.edits.empty()) {
      left.push_back(std::move(it.finding));
      continue;
    }
    edits.insert(edits.end(), it.edits.begin(), it.edits.end());
    rewritten.push_back(std::move(it.finding));
  }
  return applied(tmpl, std::move(edits));
}

}  // namespace llm2hef::core::jinja
