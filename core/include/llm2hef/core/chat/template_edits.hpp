// Edits of a chat template for the Hailo genai runtime, made on the template's
// tokens (jinja_lexer.hpp), never on its text or string literals.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core::jinja {

// One edit of the template text: [begin, end) replaced by `with` (an
// insertion when begin == end).
struct Replacement {
  size_t begin, end;
  std::string with;
};

// The template with every edit made, in template order. The edits must not
// overlap; insertions at one offset keep the order they were made in (a
// loop's closing insertion before the next loop's opening one).
std::string applied(std::string_view tmpl, std::vector<Replacement> edits);

// Whether code in the template reads the variable `name` the template is
// rendered with: not an attribute of that name, not a string that spells it,
// not a variable of the template's own under that name (a loop target, a
// `set`, a macro parameter: template_scopes.hpp). Throws Unsupported naming
// `origin` and the line of a read that is one or the other depending on the
// conversation.
bool reads_variable(std::string_view tmpl, std::string_view name, const std::string& origin);

// Every read of the variable `name` (as reads_variable) replaced by the
// string literal of `value`. A print of the variable alone (`{{ name }}`)
// becomes a print of the literal, or disappears when `value` is empty and the
// print has no whitespace-control mark (what the runtime's empty variable
// rendered). The template's own variables of that name are left alone.
std::string make_variable_literal(std::string_view tmpl, std::string_view name, std::string_view value,
                                  const std::string& origin);

// The role of the placeholder message hailort puts first in every
// conversation it renders itself: alone when it loads the model (the load
// probe, whose output it keeps), then before the messages of each later turn,
// whose rendering it cuts that output from (hailort v5.2.0
// libhailort/src/genai/llm/minja_wrapper/minja_wrapper.cpp lines 18, 42-47,
// 77-91).
inline constexpr std::string_view kHailortPlaceholderRole = "TMP";

// A `raise_exception(...)` call the edit made conditional, for the change record.
struct DisarmedGuard {
  std::string message;  // the literal message, or a description when it is computed
  std::string at;       // "line L, column C"
};

// Every `raise_exception(ARGS)` call replaced by
// `(raise_exception(ARGS) if messages[0]['role'] != 'TMP' else '')`: it still
// raises, unless the conversation starts with hailort's placeholder, where it
// renders nothing. Role-order guards cannot judge such a conversation (its
// first message stands for the turns already in the KV cache) and would stop
// the model from loading. A rendering that does not reach a raise evaluates
// the same expressions and prints the same text as before; one that reaches
// it raises as before, placeholder conversations aside.
std::string disarm_raise_calls(std::string_view tmpl, const std::string& origin, std::vector<DisarmedGuard>& disarmed);

// The raise_exception calls disarm_raise_calls has not made conditional: a
// template not written by llm2hef export (a HEF compiled elsewhere, a config
// given to `hef set-config`).
std::vector<DisarmedGuard> unspared_raise_calls(std::string_view tmpl, const std::string& origin);

}  // namespace llm2hef::core::jinja
