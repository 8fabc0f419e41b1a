// The chat template as hailort will use it (hailo-contract.md section 6,
// "The load probe"): checked for what the runtime's pinned minja cannot
// parse, guards that would fail the load probe made inert, and the special
// tokens the runtime renders empty made literal.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace llm2hef::core {

struct SpecialTokenTexts {
  std::optional<std::string> bos;  // nullopt: the checkpoint defines none
  std::optional<std::string> eos;
  bool prepend_bos = false;  // the tokenizer's post-processor adds the BOS (the runtime applies none)
};

// Throws Unsupported naming `origin`, the construct and its line when the
// template uses something hailort's pinned minja does not parse (the table in
// docs/chat-templates.md), and BadInput when the template is not well-formed
// Jinja at the lexical level (unclosed tags, strings or blocks).
void refuse_what_hailort_cannot_parse(const std::string& tmpl, const std::string& origin);

// Warnings, one line each ("chat_template: warning: line L, column C uses
// ..."), for what hailort's minja parses but cannot evaluate (filters,
// methods, tests and functions it lacks) and what hailo-ollama's older minja
// lacks besides: rendering fails only if the line is reached, which depends
// on the conversation, so these are said, not refused.
std::vector<std::string> what_minja_cannot_render(const std::string& tmpl, const std::string& origin);

// The template the runtime will render, every edit appended to `changes`:
//  * refuse_what_hailort_cannot_parse, then the warnings of
//    what_minja_cannot_render;
//  * what hailo-ollama's older minja lacks rewritten where an exact
//    equivalent exists, each rewrite recorded and the rest warned about
//    (jinja::rewrite_for_older_minja, older_minja.hpp);
//  * each raise_exception(...) call made inert (jinja::disarm_raise_calls):
//    hailort renders the template once at load with a message of role "TMP"
//    and fails to load on any exception, which role-order guards raise;
//  * bos_token: every read removed and the BOS printed once at the start as a
//    string literal (`{{ '<s>' }}`: its text is never taken for template
//    code), when the template read it or `prepend_bos`;
//  * eos_token: every read made the literal EOS (genai renders it empty,
//    hailo-ollama with the manifest's text).
// Reads are those of the variables the template is rendered with, as Jinja
// scopes them (jinja::reads_variable). Throws BadInput naming `origin` when
// the template reads bos_token and the checkpoint defines none, Unsupported
// when a read may be the template's own variable or the token depending on
// the conversation.
std::string template_for_hailort(const std::string& tmpl, const std::string& origin, const SpecialTokenTexts& tokens,
                                 std::vector<std::string>& changes);

}  // namespace llm2hef::core
