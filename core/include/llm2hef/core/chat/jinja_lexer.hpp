// A lexer for Jinja chat templates: enough to edit a template safely, nothing
// that evaluates it.
//
// It splits a template into text, comments and code (`{{ ... }}`,
// `{% ... %}`), and code into tokens, so that an edit touches identifiers and
// calls and never the text around them or a string literal. Rendering is left
// to a real engine: the runtime's minja on the device, jinja2 in the tests.
// The delimiters and marks are Jinja's defaults, the ones Hugging Face
// templates use (jinja2 docs, "Template Designer Documentation": whitespace
// control `-`/`+`, `{% raw %}`); line statements are off, as in transformers'
// environment.
//
// Every function here is linear in the template's length (a template is at
// most 4 MiB, docs/reliability.md): messages about many places of one
// template go through a LineIndex, not where().
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core::jinja {

enum class SegmentKind { text, comment, expression, statement };

struct Segment {
  SegmentKind kind = SegmentKind::text;
  size_t begin = 0, end = 0;            // the segment, delimiters included: [begin, end)
  size_t code_begin = 0, code_end = 0;  // code segments: between the delimiters and their marks
  char left_mark = 0, right_mark = 0;   // '-' or '+' after `{{`/`{%`, before `}}`/`%}`; 0 when none
};

enum class TokenKind { name, string, number, op };

struct Token {
  TokenKind kind = TokenKind::op;
  size_t begin = 0, end = 0;  // offsets in the template
};

// Line and column (both from 1) of `offset`, for messages.
struct Position {
  size_t line = 1, column = 1;
};
Position position_of(std::string_view tmpl, size_t offset);
// "line L, column C". Scans the template up to `offset`: for one message.
std::string where(std::string_view tmpl, size_t offset);

// The lines of a template, for messages about many places in it: each
// position in logarithmic time, where where() would scan from the start.
class LineIndex {
 public:
  explicit LineIndex(std::string_view tmpl);
  Position position_of(size_t offset) const;
  std::string where(size_t offset) const;  // as jinja::where()

 private:
  std::vector<size_t> line_starts_;
};

// The template's segments, in order, covering it whole. `{% raw %}` bodies are
// text, ended by the first `{% endraw %}` as jinja2 ends them (the body is not
// lexed). Throws BadInput naming `origin` and the line of an unterminated
// comment, code segment or string, or a closing bracket without its opening.
std::vector<Segment> split(std::string_view tmpl, const std::string& origin);

// The tokens of a code segment. Throws BadInput naming `origin` and the
// position of a character no Jinja token starts with.
std::vector<Token> tokenize(std::string_view tmpl, const Segment& code, const std::string& origin);

// The text of a token.
inline std::string_view text_of(std::string_view tmpl, const Token& t) { return tmpl.substr(t.begin, t.end - t.begin); }

// The value of a string literal token (quotes removed, Python-style escapes
// for the common cases decoded), for messages and comparisons.
std::string string_value(std::string_view tmpl, const Token& t);

// A Jinja string literal whose value is `value`.
std::string string_literal(std::string_view value);

}  // namespace llm2hef::core::jinja
