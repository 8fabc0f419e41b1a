#include "llm2hef/core/chat/template_edits.hpp"

#include <algorithm>
#include <cctype>

#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/core/chat/template_scopes.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::jinja {

namespace {

bool is_op(std::string_view tmpl, const Token& t, std::string_view op) {
  return t.kind == TokenKind::op && text_of(tmpl, t) == op;
}

// Whether tokens[i], a name, may be a call of the global raise_exception: not
// an attribute (`x.name`), not a keyword argument or an assignment target
// (`f(name=1)`, `{% set name = ... %}`), not a loop or macro variable being
// declared (`for name in`). A call of a macro the template names so is made
// conditional too, which is harmless: only the placeholder conversation skips
// it.
bool is_variable_read(std::string_view tmpl, const std::vector<Token>& tokens, size_t i) {
  if (i > 0 && is_op(tmpl, tokens[i - 1], ".")) return false;
  if (i + 1 < tokens.size() && is_op(tmpl, tokens[i + 1], "=")) return false;
  if (i > 0 && tokens[i - 1].kind == TokenKind::name &&
      (text_of(tmpl, tokens[i - 1]) == "for" || text_of(tmpl, tokens[i - 1]) == "set" ||
       text_of(tmpl, tokens[i - 1]) == "macro"))
    return false;
  return true;
}

// The reads of `name` that are the variable the template is rendered with
// (template_scopes.hpp): not the template's own variables of that name.
// Throws Unsupported at a read that may be either, depending on the
// conversation: no edit of it keeps what Hugging Face renders.
std::vector<NameRead> context_reads(std::string_view tmpl, const std::vector<Segment>& segments, std::string_view name,
                                    const std::string& origin) {
  std::vector<NameRead> out;
  for (const NameRead& r : reads_of(tmpl, segments, name, origin)) {
    if (r.referent == Referent::unclear)
      throw Unsupported(origin + ": chat template, " + where(tmpl, r.begin) + ": reads '" + std::string(name) +
                        "', which is the special token or the template's own variable bound at " +
                        where(tmpl, r.bound_at) +
                        " depending on the conversation (Jinja's scoping), so it cannot be made the token's literal "
                        "text for the runtime; rename the template's variable, or give export a template with "
                        "--chat-template FILE");
    if (r.referent == Referent::context) out.push_back(r);
  }
  return out;
}

// Whether the code of `seg` is the name token alone (`{{ name }}`).
bool is_lone_print(std::string_view tmpl, const Segment& seg, const NameRead& r) {
  if (seg.kind != SegmentKind::expression) return false;
  for (size_t i = seg.code_begin; i < seg.code_end; ++i)
    if ((i < r.begin || i >= r.end) && !std::isspace(static_cast<unsigned char>(tmpl[i]))) return false;
  return true;
}

bool is_code(const Segment& s) { return s.kind == SegmentKind::expression || s.kind == SegmentKind::statement; }

}  // namespace

std::string applied(std::string_view tmpl, std::vector<Replacement> edits) {
  std::stable_sort(edits.begin(), edits.end(),
                   [](const Replacement& a, const Replacement& b) { return a.begin < b.begin; });
  std::string out;
  size_t from = 0;
  for (const Replacement& e : edits) {
    out.append(tmpl.substr(from, e.begin - from)).append(e.with);
    from = e.end;
  }
  return out.append(tmpl.substr(from));
}

bool reads_variable(std::string_view tmpl, std::string_view name, const std::string& origin) {
  return !context_reads(tmpl, split(tmpl, origin), name, origin).empty();
}

std::string make_variable_literal(std::string_view tmpl, std::string_view name, std::string_view value,
                                  const std::string& origin) {
  std::vector<Replacement> edits;
  const std::string literal = string_literal(value);
  const std::vector<Segment> segments = split(tmpl, origin);
  for (const NameRead& r : context_reads(tmpl, segments, name, origin)) {
    const Segment& seg = segments[r.segment];
    if (value.empty() && !seg.left_mark && !seg.right_mark && is_lone_print(tmpl, seg, r))
      edits.push_back({seg.begin, seg.end, ""});
    else
      edits.push_back({r.begin, r.end, literal});
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
