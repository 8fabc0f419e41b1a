#include "llm2hef/core/chat/template_edits.hpp"

#include <algorithm>

#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::jinja {

namespace {

struct Replacement {
  size_t begin, end;
  std::string with;
};

std::string applied(std::string_view tmpl, std::vector<Replacement> edits) {
  std::sort(edits.begin(), edits.end(), [](const Replacement& a, const Replacement& b) { return a.begin < b.begin; });
  std::string out;
  size_t from = 0;
  for (const Replacement& e : edits) {
    out.append(tmpl.substr(from, e.begin - from)).append(e.with);
    from = e.end;
  }
  return out.append(tmpl.substr(from));
}

bool is_op(std::string_view tmpl, const Token& t, std::string_view op) {
  return t.kind == TokenKind::op && text_of(tmpl, t) == op;
}

// Whether tokens[i], a name, is a read of the variable of that name: not an
// attribute (`x.name`), not a keyword argument or an assignment target
// (`f(name=1)`, `{% set name = ... %}`), not a loop or macro variable being
// declared (`for name in`). Those would name another thing that happens to be
// spelled the same.
bool is_variable_read(std::string_view tmpl, const std::vector<Token>& tokens, size_t i) {
  if (i > 0 && is_op(tmpl, tokens[i - 1], ".")) return false;
  if (i + 1 < tokens.size() && is_op(tmpl, tokens[i + 1], "=")) return false;
  if (i > 0 && tokens[i - 1].kind == TokenKind::name &&
      (text_of(tmpl, tokens[i - 1]) == "for" || text_of(tmpl, tokens[i - 1]) == "set" ||
       text_of(tmpl, tokens[i - 1]) == "macro"))
    return false;
  return true;
}

bool is_code(const Segment& s) { return s.kind == SegmentKind::expression || s.kind == SegmentKind::statement; }

}  // namespace

bool reads_variable(std::string_view tmpl, std::string_view name, const std::string& origin) {
  for (const Segment& seg : split(tmpl, origin)) {
    if (!is_code(seg)) continue;
    const std::vector<Token> tokens = tokenize(tmpl, seg, origin);
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].kind == TokenKind::name && text_of(tmpl, tokens[i]) == name && is_variable_read(tmpl, tokens, i))
        return true;
  }
  return false;
}

std::string make_variable_literal(std::string_view tmpl, std::string_view name, std::string_view value,
                                  const std::string& origin) {
  std::vector<Replacement> edits;
  const std::string literal = string_literal(value);
  for (const Segment& seg : split(tmpl, origin)) {
    if (!is_code(seg)) continue;
    const std::vector<Token> tokens = tokenize(tmpl, seg, origin);
    const bool lone_print = seg.kind == SegmentKind::expression && tokens.size() == 1 &&
                            tokens[0].kind == TokenKind::name && text_of(tmpl, tokens[0]) == name;
    if (lone_print && value.empty() && !seg.left_mark && !seg.right_mark) {
      edits.push_back({seg.begin, seg.end, ""});
      continue;
    }
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].kind == TokenKind::name && text_of(tmpl, tokens[i]) == name && is_variable_read(tmpl, tokens, i))
        edits.push_back({tokens[i].begin, tokens[i].end, literal});
  }
  return applied(tmpl, std::move(edits));
}

namespace {

// A raise_exception call in a code segment: the index of its name and of its
// closing ')'.
struct RaiseCall {
  size_t name, close;
};

std::vector<RaiseCall> raise_calls(std::string_view tmpl, const std::vector<Token>& tokens, const std::string& origin) {
  std::vector<RaiseCall> calls;
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::name || text_of(tmpl, tokens[i]) != "raise_exception" ||
        !is_op(tmpl, tokens[i + 1], "(") || !is_variable_read(tmpl, tokens, i))
      continue;
    // The matching ')': the lexer balanced the brackets of the segment.
    size_t close = i + 1;
    for (int depth = 0; close < tokens.size(); ++close) {
      if (is_op(tmpl, tokens[close], "(")) ++depth;
      if (is_op(tmpl, tokens[close], ")") && --depth == 0) break;
    }
    if (close == tokens.size())
      throw BadInput(origin + ": chat template, " + where(tmpl, tokens[i].begin) + ": raise_exception( is not closed");
    calls.push_back({i, close});
    i = close;
  }
  return calls;
}

DisarmedGuard guard_of(std::string_view tmpl, const LineIndex& lines, const std::vector<Token>& tokens,
                       const RaiseCall& c) {
  DisarmedGuard guard;
  guard.at = lines.where(tokens[c.name].begin);
  if (c.close == c.name + 2)
    guard.message = "(no message)";
  else if (c.close == c.name + 3 && tokens[c.name + 2].kind == TokenKind::string)
    guard.message = string_value(tmpl, tokens[c.name + 2]);
  else
    guard.message =
        "(a computed message: " +
        std::string(tmpl.substr(tokens[c.name + 2].begin, tokens[c.close].begin - tokens[c.name + 2].begin)) + ")";
  return guard;
}

// The condition disarm_raise_calls appends after the call.
std::string placeholder_condition() {
  return " if messages[0]['role'] != " + string_literal(kHailortPlaceholderRole) + " else ''";
}

}  // namespace

std::string disarm_raise_calls(std::string_view tmpl, const std::string& origin, std::vector<DisarmedGuard>& disarmed) {
  std::vector<Replacement> edits;
  const LineIndex lines(tmpl);
  for (const Segment& seg : split(tmpl, origin)) {
    if (!is_code(seg)) continue;
    const std::vector<Token> tokens = tokenize(tmpl, seg, origin);
    for (const RaiseCall& c : raise_calls(tmpl, tokens, origin)) {
      disarmed.push_back(guard_of(tmpl, lines, tokens, c));
      const std::string call(tmpl.substr(tokens[c.name].begin, tokens[c.close].end - tokens[c.name].begin));
      edits.push_back({tokens[c.name].begin, tokens[c.close].end, "(" + call + placeholder_condition() + ")"});
    }
  }
  return applied(tmpl, std::move(edits));
}

std::vector<DisarmedGuard> unspared_raise_calls(std::string_view tmpl, const std::string& origin) {
  // The tokens of the condition, as disarm_raise_calls writes it.
  const std::string condition = "{{" + placeholder_condition() + "}}";
  const std::vector<Segment> cond_segments = split(condition, "(condition)");
  std::vector<std::string> expected;
  for (const Token& t : tokenize(condition, cond_segments[0], "(condition)"))
    expected.emplace_back(text_of(condition, t));

  std::vector<DisarmedGuard> out;
  const LineIndex lines(tmpl);
  for (const Segment& seg : split(tmpl, origin)) {
    if (!is_code(seg)) continue;
    const std::vector<Token> tokens = tokenize(tmpl, seg, origin);
    for (const RaiseCall& c : raise_calls(tmpl, tokens, origin)) {
      bool spared = c.name > 0 && is_op(tmpl, tokens[c.name - 1], "(");
      for (size_t k = 0; spared && k < expected.size(); ++k)
        spared = c.close + 1 + k < tokens.size() && text_of(tmpl, tokens[c.close + 1 + k]) == expected[k];
      if (!spared) out.push_back(guard_of(tmpl, lines, tokens, c));
    }
  }
  return out;
}

}  // namespace llm2hef::core::jinja
