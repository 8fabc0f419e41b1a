// hailo-ollama's older minja: the constructs it lacks, rewritten where an
// exact equivalent exists, reported where none does.
//
// hailo-ollama v5.1.1 renders the chat template of its store manifest with
// the minja it vendors (hailo_model_zoo_genai thirdparty/minja, google/minja
// ea5fe1b of 2025-04-07), on every request; hailort's own minja (58568621,
// pinned by hailort v5.1.0-v5.2.0) renders the HEF's copy when the model
// loads. The older one lacks slices with a step (a parse error: no request
// renders), str.startswith, str.replace, the tests `true`/`false`, and
// substring tests (`'a' in s` is false for every string s). The table, with
// minja.hpp line numbers, is in docs/chat-templates.md.
//
// The rewrites keep what jinja2 (Hugging Face) renders, and render the same
// in both minja generations, for templates given string message contents:
//  * `for x in E[::-1]` (E an operand: names, attributes, subscripts, calls),
//    without a loop filter or `recursive`, its body not reading
//    loop.previtem/nextitem: E bound once before the loop, the loop made a
//    loop over indices counting down (range() with step -1, which both
//    minjas have), x bound first thing in the body;
//  * `[::]`, `[a:b:1]` and the like: the step dropped; `[:]` becomes `[0:]`;
//  * `X.startswith('lit')`, lit ASCII: `(X[:n] == 'lit')` with n its length
//    (minja slices strings by bytes, jinja2 by characters: the same for ASCII);
//  * `'lit' in B` and `'lit' not in B` (lit not empty, B an operand without
//    calls): `('lit' in B if B is not string else (B.split('lit')|length) > 1)`,
//    negated for `not in` (which the older minja also gets wrong for mappings);
//  * `x is true`, `x is false` (x an operand without calls):
//    `(x is boolean and x)`, `(x is boolean and not x)`, jinja2's meaning
//    (hailort's minja tests truthiness there).
// Every pass is linear in the template's length.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llm2hef::core::jinja {

// A construct of the template the older minja lacks.
struct OlderMinjaFinding {
  std::string construct;  // what, as a message shows it ("the slice '[::2]' (a step other than ...)")
  std::string at;         // "line L, column C"
  bool rewritable = false;
};

// Every construct of `tmpl` the older minja lacks, in template order, each
// marked rewritable when rewrite_for_older_minja changes it into an
// equivalent. Throws BadInput naming `origin` where the lexer cannot read
// the template.
std::vector<OlderMinjaFinding> older_minja_findings(std::string_view tmpl, const std::string& origin);

// The template with every rewritable finding rewritten (the list above); the
// findings rewritten are appended to `rewritten`, the others, left as they
// are, to `left` (both placed in `tmpl`).
std::string rewrite_for_older_minja(std::string_view tmpl, const std::string& origin,
                                    std::vector<OlderMinjaFinding>& rewritten, std::vector<OlderMinjaFinding>& left);

// One line per construct, at its first place: "line L, column C: CONSTRUCT",
// with " (and at N more places)" when it recurs.
std::vector<std::string> older_minja_summary(const std::vector<OlderMinjaFinding>& findings);

}  // namespace llm2hef::core::jinja
