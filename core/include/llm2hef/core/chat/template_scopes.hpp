// What a variable read in a chat template refers to: the variable the caller
// renders the template with (`bos_token`, `eos_token`: the tokenizer's special
// tokens), or one the template binds itself under the same name (a loop
// variable, a `set` target, a macro parameter).
//
// The rules are jinja2's (3.x, what transformers' apply_chat_template renders
// with), as the engine behaves, checked against it in
// tests/cli/chat/test_hostile_templates.py:
//  * `for` bodies, macro bodies, `call`, `filter`, `with`, `autoescape` and
//    `generation` blocks, a `for`'s `else` and a block `set`'s body are scopes:
//    what is bound inside is not seen after them. `if` branches are not
//    scopes: a `set` in one is seen after the `endif` when that branch ran.
//  * A `set` binds from the statement on, in its scope; a read before it in
//    the same scope (even in a loop's later iteration) is the outer variable.
//  * A macro body runs when the macro is called, and sees its defining
//    scope's variables as they are then.
// A read is `unclear` where that depends on the conversation (a `set` in an
// `if` branch, a macro reading a name its scope binds only later, a block
// `set` reading its own target): no single edit keeps its meaning.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "llm2hef/core/chat/jinja_lexer.hpp"

namespace llm2hef::core::jinja {

enum class Referent { context, local, unclear };

struct NameRead {
  size_t segment = 0;         // index in the segments given
  size_t begin = 0, end = 0;  // the name token
  Referent referent = Referent::context;
  size_t bound_at = 0;  // local or unclear: where the template binds the name
};

// Every read of the variable `name` in the code of `segments` (split() of
// `tmpl`), in template order, with what it refers to. Attributes
// (`x.name`), keyword arguments, filter and test names and the names a
// statement binds are not reads. Throws BadInput naming `origin` and the
// line of an end tag that closes no open block. Linear in the template.
std::vector<NameRead> reads_of(std::string_view tmpl, const std::vector<Segment>& segments, std::string_view name,
                               const std::string& origin);

}  // namespace llm2hef::core::jinja
