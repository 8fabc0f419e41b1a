#include "llm2hef/core/chat/jinja_lexer.hpp"

#include <algorithm>
#include <cctype>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::jinja {

namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

[[noreturn]] void fail(std::string_view tmpl, size_t at, const std::string& origin, const std::string& what) {
  throw BadInput(origin + ": chat template, " + where(tmpl, at) + ": " + what);
}

// The offset just past the string literal that starts at `at` (a quote).
size_t skip_string(std::string_view s, size_t at, const std::string& origin) {
  const char quote = s[at];
  for (size_t i = at + 1; i < s.size(); ++i) {
    if (s[i] == '\\') {
      ++i;
    } else if (s[i] == quote) {
      return i + 1;
    }
  }
  fail(s, at, origin, "string literal is not closed");
}

// The end of the code segment opened at `open` ("{{" or "{%"): fills the code
// range, the right mark and the end. Brackets are balanced first, as Jinja's
// lexer does, so that `{{ {'a': 1}}}` ends after the dict.
void close_code(std::string_view s, size_t open, const std::string& origin, Segment& seg) {
  const char closer = seg.kind == SegmentKind::expression ? '}' : '%';
  size_t i = open + 2;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) seg.left_mark = s[i++];
  seg.code_begin = i;
  std::vector<char> brackets;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      i = skip_string(s, i, origin);
      continue;
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      ++i;
      continue;
    }
    if (!brackets.empty() && (c == ')' || c == ']' || c == '}')) {
      if (c != brackets.back())
        fail(s, i, origin, std::string("'") + c + "' where '" + brackets.back() + "' closes the open bracket");
      brackets.pop_back();
      ++i;
      continue;
    }
    if (brackets.empty()) {
      const bool marked = (c == '-' || c == '+') && i + 2 < s.size() && s[i + 1] == closer && s[i + 2] == '}';
      if (marked || (c == closer && i + 1 < s.size() && s[i + 1] == '}')) {
        seg.code_end = i;
        if (marked) seg.right_mark = c;
        seg.end = i + (marked ? 3 : 2);
        return;
      }
    }
    ++i;
  }
  fail(s, open, origin,
       seg.kind == SegmentKind::expression ? "'{{' is not closed by '}}'" : "'{%' is not closed by '%}'");
}

// The first name of a statement's code ("if", "for", "raw", ...).
std::string_view keyword_of(std::string_view s, const Segment& seg) {
  size_t i = seg.code_begin;
  while (i < seg.code_end && is_space(s[i])) ++i;
  size_t j = i;
  while (j < seg.code_end && is_name_char(s[j])) ++j;
  return s.substr(i, j - i);
}

// Where the `{% endraw %}` that closes a raw block starting at `from` begins.
// jinja2 finds it with a regular expression on the text, not by lexing the
// body: "{%", an optional '-' or '+', spaces, "endraw", spaces, then "%}",
// "-%}" or "+%}" (jinja2/lexer.py, the TOKEN_RAW_BEGIN rule). So does this,
// in one pass: the spaces after one "{%" end before the next "{%".
size_t find_endraw(std::string_view s, size_t from, Segment& endraw, const std::string& origin) {
  constexpr std::string_view kEndraw = "endraw";
  for (size_t at = s.find("{%", from); at != std::string_view::npos; at = s.find("{%", at + 2)) {
    Segment seg;
    seg.kind = SegmentKind::statement;
    seg.begin = at;
    size_t i = at + 2;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) seg.left_mark = s[i++];
    seg.code_begin = i;
    while (i < s.size() && is_space(s[i])) ++i;
    if (s.substr(i, kEndraw.size()) != kEndraw) continue;
    i += kEndraw.size();
    while (i < s.size() && is_space(s[i])) ++i;
    seg.code_end = i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) seg.right_mark = s[i++];
    if (s.substr(i, 2) != "%}") continue;
    seg.end = i + 2;
    endraw = seg;
    return at;
  }
  fail(s, from, origin, "'{% raw %}' without '{% endraw %}'");
}

}  // namespace

Position position_of(std::string_view tmpl, size_t offset) {
  Position p;
  for (size_t i = 0; i < offset && i < tmpl.size(); ++i) {
    if (tmpl[i] == '\n') {
      ++p.line;
      p.column = 1;
    } else {
      ++p.column;
    }
  }
  return p;
}

namespace {
std::string position_text(const Position& p) {
  return "line " + std::to_string(p.line) + ", column " + std::to_string(p.column);
}
}  // namespace

std::string where(std::string_view tmpl, size_t offset) { return position_text(position_of(tmpl, offset)); }

LineIndex::LineIndex(std::string_view tmpl) : line_starts_{0} {
  for (size_t i = tmpl.find('\n'); i != std::string_view::npos; i = tmpl.find('\n', i + 1))
    line_starts_.push_back(i + 1);
}

Position LineIndex::position_of(size_t offset) const {
  // The last line starting at or before `offset` (line_starts_ begins with 0).
  const auto after = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(after - line_starts_.begin());
  return {line, offset - line_starts_[line - 1] + 1};
}

std::string LineIndex::where(size_t offset) const { return position_text(position_of(offset)); }

std::vector<Segment> split(std::string_view s, const std::string& origin) {
  std::vector<Segment> out;
  size_t i = 0;
  auto text_until = [&](size_t end) {
    if (end > i) out.push_back({SegmentKind::text, i, end, i, end, 0, 0});
  };
  while (i < s.size()) {
    size_t open = s.find('{', i);
    while (open != std::string_view::npos && open + 1 < s.size() && s[open + 1] != '{' && s[open + 1] != '%' &&
           s[open + 1] != '#')
      open = s.find('{', open + 1);
    if (open == std::string_view::npos || open + 1 >= s.size()) {
      text_until(s.size());
      break;
    }
    text_until(open);
    Segment seg;
    seg.begin = open;
    if (s[open + 1] == '#') {
      const size_t close = s.find("#}", open + 2);
      if (close == std::string_view::npos) fail(s, open, origin, "'{#' comment is not closed by '#}'");
      seg.kind = SegmentKind::comment;
      seg.code_begin = seg.code_end = seg.end = close + 2;
      out.push_back(seg);
      i = seg.end;
      continue;
    }
    seg.kind = s[open + 1] == '{' ? SegmentKind::expression : SegmentKind::statement;
    close_code(s, open, origin, seg);
    out.push_back(seg);
    i = seg.end;
    if (seg.kind == SegmentKind::statement && keyword_of(s, seg) == "raw") {
      Segment endraw;
      const size_t body_end = find_endraw(s, i, endraw, origin);
      text_until(body_end);
      out.push_back(endraw);
      i = endraw.end;
    }
  }
  return out;
}

std::vector<Token> tokenize(std::string_view s, const Segment& code, const std::string& origin) {
  static const std::string_view kTwoCharOps[] = {"**", "//", "==", "!=", "<=", ">="};
  static const std::string_view kOneCharOps = "+-*/%~()[]{}.,:|=<>!";
  std::vector<Token> out;
  size_t i = code.code_begin;
  while (i < code.code_end) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    Token t;
    t.begin = i;
    if (c == '\'' || c == '"') {
      t.kind = TokenKind::string;
      t.end = skip_string(s, i, origin);
    } else if (is_name_start(c)) {
      t.kind = TokenKind::name;
      t.end = i + 1;
      while (t.end < code.code_end && is_name_char(s[t.end])) ++t.end;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      t.kind = TokenKind::number;
      t.end = i + 1;
      while (t.end < code.code_end && (is_name_char(s[t.end]) || s[t.end] == '.')) ++t.end;
    } else {
      t.kind = TokenKind::op;
      t.end = i + 1;
      for (std::string_view op : kTwoCharOps)
        if (s.substr(i, 2) == op) t.end = i + 2;
      if (t.end == i + 1 && kOneCharOps.find(c) == std::string_view::npos)
        fail(s, i, origin, std::string("unexpected character '") + c + "' in code");
    }
    out.push_back(t);
    i = t.end;
  }
  return out;
}

std::string string_value(std::string_view s, const Token& t) {
  std::string out;
  for (size_t i = t.begin + 1; i + 1 < t.end; ++i) {
    if (s[i] != '\\' || i + 2 >= t.end) {
      out += s[i];
      continue;
    }
    const char e = s[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case '\\':
      case '\'':
      case '"': out += e; break;
      default: out += '\\'; out += e;
    }
  }
  return out;
}

std::string string_literal(std::string_view value) {
  std::string out = "'";
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "'";
}

}  // namespace llm2hef::core::jinja
