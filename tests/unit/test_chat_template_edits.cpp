// The Jinja lexer and the template edits made for hailort: edits touch code
// tokens only, never text or string literals; every raise_exception call is
// made inert; bos/eos reads become literals; what hailort's minja cannot parse
// and malformed block structure are refused with the line. Rendering (that the
// edited templates render as the originals) is tested with a real engine in
// tests/cli/chat/test_hailort_template.py.
#include <functional>

#include <gtest/gtest.h>

#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/core/chat/older_minja.hpp"
#include "llm2hef/core/chat/template_edits.hpp"
#include "llm2hef/core/chat/template_scopes.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;
using namespace llm2hef::core;

namespace {

std::string disarmed(const std::string& t, std::vector<jinja::DisarmedGuard>* guards = nullptr) {
  std::vector<jinja::DisarmedGuard> g;
  std::string out = jinja::disarm_raise_calls(t, "t.jinja", g);
  if (guards) *guards = g;
  return out;
}

// What a raise_exception(ARGS) call becomes.
std::string spared(const std::string& call) { return "(" + call + " if messages[0]['role'] != 'TMP' else '')"; }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(JinjaLexer, SplitsTextCommentsAndCodeWithMarks) {
  const std::string t = "a{# c #}{{- x -}}b{%+ if y +%}{% endif %}";
  const auto segs = jinja::split(t, "t");
  ASSERT_EQ(segs.size(), 6u);
  EXPECT_EQ(segs[0].kind, jinja::SegmentKind::text);
  EXPECT_EQ(segs[1].kind, jinja::SegmentKind::comment);
  EXPECT_EQ(segs[2].kind, jinja::SegmentKind::expression);
  EXPECT_EQ(segs[2].left_mark, '-');
  EXPECT_EQ(segs[2].right_mark, '-');
  EXPECT_EQ(t.substr(segs[2].code_begin, segs[2].code_end - segs[2].code_begin), " x ");
  EXPECT_EQ(segs[4].kind, jinja::SegmentKind::statement);
  EXPECT_EQ(segs[4].left_mark, '+');
  EXPECT_EQ(segs[4].right_mark, '+');
}

TEST(JinjaLexer, DelimitersInsideStringsAndBracketsDoNotCloseCode) {
  const std::string t = "{{ '}}' + \"%}\" }}{{ {'a': 1}}}z";
  const auto segs = jinja::split(t, "t");
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].end, t.find("{{ {'a'"));
  EXPECT_EQ(t.substr(segs[1].begin, segs[1].end - segs[1].begin), "{{ {'a': 1}}}");
  EXPECT_EQ(segs[2].kind, jinja::SegmentKind::text);
}

TEST(JinjaLexer, RawBodyIsText) {
  const std::string t = "{% raw %}{{ raise_exception('x') }}{% endraw %}";
  const auto segs = jinja::split(t, "t");
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[1].kind, jinja::SegmentKind::text);
  EXPECT_EQ(disarmed(t), t);
}

TEST(JinjaLexer, RawBodyEndsAtTheFirstEndrawWhateverItHolds) {
  // jinja2 does not lex a raw body: unclosed strings and tags are text.
  for (const std::string end : {"{% endraw %}", "{%-endraw-%}", "{%+ endraw +%}", "{%endraw%}"}) {
    const std::string t = "{% raw %}{{ 'x {%}{%}{# " + end + "tail";
    const auto segs = jinja::split(t, "t");
    ASSERT_EQ(segs.size(), 4u) << end;
    EXPECT_EQ(segs[1].kind, jinja::SegmentKind::text);
    EXPECT_EQ(t.substr(segs[2].begin, segs[2].end - segs[2].begin), end);
    EXPECT_EQ(t.substr(segs[3].begin), "tail");
  }
  EXPECT_NE(message_of([] { jinja::split("{% raw %}{% endrawx %}", "t"); }).find("without '{% endraw %}'"),
            std::string::npos);
}

TEST(JinjaLexer, LineIndexAgreesWithWhere) {
  const std::string t = "a\n\nbc\nd";
  const jinja::LineIndex lines(t);
  for (size_t i = 0; i <= t.size(); ++i) EXPECT_EQ(lines.where(i), jinja::where(t, i)) << i;
}

TEST(JinjaLexer, UnterminatedPiecesNameTheLine) {
  EXPECT_NE(message_of([] { jinja::split("a\n{{ x", "t.jinja"); }).find("t.jinja: chat template, line 2, column 1"),
            std::string::npos);
  EXPECT_NE(message_of([] { jinja::split("{{ 'x }}", "t"); }).find("string literal is not closed"), std::string::npos);
  EXPECT_NE(message_of([] { jinja::split("{# x", "t"); }).find("comment"), std::string::npos);
  EXPECT_NE(message_of([] { jinja::split("{{ (a] }}", "t"); }).find("']'"), std::string::npos);
}

TEST(JinjaLexer, StringLiteralRoundTrips) {
  const std::string value = "it's a \\ \"q\"\n";
  const std::string lit = jinja::string_literal(value);
  const std::string t = "{{ " + lit + " }}";
  const auto segs = jinja::split(t, "t");
  const auto toks = jinja::tokenize(t, segs[0], "t");
  ASSERT_EQ(toks.size(), 1u);
  EXPECT_EQ(jinja::string_value(t, toks[0]), value);
}

TEST(TemplateEdits, EveryRaiseCallSparesThePlaceholderConversation) {
  std::vector<jinja::DisarmedGuard> g;
  const std::string t =
      "{% if a %}{{ raise_exception('Roles must alternate') }}{% endif %}"
      "{{- raise_exception(\"bad \" + role) -}}{% set x = y if z else raise_exception('no (user) query') %}";
  EXPECT_EQ(disarmed(t, &g), "{% if a %}{{ " + spared("raise_exception('Roles must alternate')") +
                                 " }}{% endif %}{{- " + spared("raise_exception(\"bad \" + role)") +
                                 " -}}{% set x = y if z else " + spared("raise_exception('no (user) query')") + " %}");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].message, "Roles must alternate");
  EXPECT_EQ(g[0].at, "line 1, column 14");
  EXPECT_NE(g[1].message.find("computed"), std::string::npos);
  EXPECT_EQ(g[2].message, "no (user) query");
}

TEST(TemplateEdits, RaiseInTextStringOrAttributeIsLeftAlone) {
  const std::string t = "raise_exception('x') {{ 'raise_exception(1)' }}{{ ns.raise_exception(1) }}";
  EXPECT_EQ(disarmed(t), t);
}

TEST(TemplateEdits, VariableReadsBecomeLiteralsOnlyInCode) {
  const std::string t =
      "eos_token {{ message['content'] + eos_token }}{{ 'eos_token' }}{{ x.eos_token }}{% set eos_token2 = 1 %}";
  EXPECT_EQ(jinja::make_variable_literal(t, "eos_token", "</s>", "t"),
            "eos_token {{ message['content'] + '</s>' }}{{ 'eos_token' }}{{ x.eos_token }}{% set eos_token2 = 1 %}");
  EXPECT_TRUE(jinja::reads_variable(t, "eos_token", "t"));
  EXPECT_FALSE(jinja::reads_variable("{{ 'eos_token' }} eos_token {{ a.eos_token }}", "eos_token", "t"));
}

// What each read of bos_token refers to, in order: 'c' the variable the
// template is rendered with, 'l' the template's own, 'u' it depends.
std::string referents(const std::string& t) {
  std::string out;
  for (const jinja::NameRead& r : jinja::reads_of(t, jinja::split(t, "t"), "bos_token", "t"))
    out += r.referent == jinja::Referent::context ? 'c' : r.referent == jinja::Referent::local ? 'l' : 'u';
  return out;
}

TEST(TemplateScopes, TheTemplatesOwnVariablesAreNotTheContexts) {
  // Loop targets (also in the loop's filter, not in its iterable or else).
  EXPECT_EQ(referents("{% for a, bos_token in bos_token if bos_token %}{{ bos_token }}{% else %}{{ bos_token }}"
                      "{% endfor %}{{ bos_token }}"),
            "cllcc");
  // A set binds from the statement on, in its scope; the value is read before.
  EXPECT_EQ(referents("{{ bos_token }}{% set bos_token = bos_token + 'x' %}{{ bos_token }}"), "ccl");
  EXPECT_EQ(referents("{% for m in ms %}{{ bos_token }}{% set bos_token = 1 %}{{ bos_token }}{% endfor %}"
                      "{{ bos_token }}"),
            "clc");
  // Macro parameters and defaults; a macro named so.
  EXPECT_EQ(referents("{% macro m(a=bos_token, bos_token=1) %}{{ bos_token }}{% endmacro %}{{ bos_token }}"), "clc");
  EXPECT_EQ(referents("{% macro bos_token() %}{% endmacro %}{{ bos_token() }}"), "l");
  // Defaults are evaluated at the call, where a later set is seen.
  EXPECT_EQ(referents("{% macro m(a=bos_token) %}{% endmacro %}{% set bos_token = 1 %}{{ m() }}"), "u");
  // A block set is bound after its end.
  EXPECT_EQ(referents("{% set x %}{{ bos_token }}{% endset %}{% set bos_token %}y{% endset %}{{ bos_token }}"), "cl");
  // Attributes, keyword arguments, filter and test names are not reads.
  EXPECT_EQ(referents("{{ a.bos_token }}{{ f(bos_token=1) }}{{ a|bos_token }}{{ a is bos_token }}"
                      "{% set ns.bos_token = 1 %}"),
            "");
  // A set inside an if branch is seen there, and after it only if it ran.
  EXPECT_EQ(referents("{% if c %}{% set bos_token = 1 %}{{ bos_token }}{% for i in x %}{{ bos_token }}{% endfor %}"
                      "{% endif %}{{ bos_token }}"),
            "llu");
  // A macro sees its scope's variables when it is called.
  EXPECT_EQ(referents("{% macro m() %}{{ bos_token }}{% endmacro %}{% set bos_token = 1 %}{{ m() }}"), "u");
  EXPECT_EQ(referents("{% set bos_token = 1 %}{% macro m() %}{{ bos_token }}{% endmacro %}"), "l");
  EXPECT_EQ(referents("{% macro m() %}{{ bos_token }}{% endmacro %}{% for x in y %}{% set bos_token = 1 %}"
                      "{% endfor %}"),
            "c");
  // A block set reading its own target.
  EXPECT_EQ(referents("{% set bos_token %}{{ bos_token }}{% endset %}"), "u");
  // Scopes that do not leak: filter, with, call, for's else.
  EXPECT_EQ(referents("{% filter upper %}{% set bos_token = 1 %}{% endfilter %}{{ bos_token }}"
                      "{% with bos_token = 2 %}{{ bos_token }}{% endwith %}{{ bos_token }}"),
            "clc");
}

TEST(TemplateScopes, EndTagsMustCloseTheOpenBlock) {
  EXPECT_NE(message_of([] { referents("{% for a in b %}{% endif %}"); }).find("was expected"), std::string::npos);
  EXPECT_NE(message_of([] { referents("{% endfor %}"); }).find("closes no open block"), std::string::npos);
  EXPECT_NE(message_of([] { referents("{% elif x %}"); }).find("outside an if block"), std::string::npos);
}

TEST(TemplateEdits, LocalVariablesNamedLikeTokensAreLeftAlone) {
  const std::string t =
      "{% for bos_token in messages %}{{ bos_token['content'] }}{% endfor %}{% set eos_token = '|' %}"
      "{{ eos_token }}";
  EXPECT_FALSE(jinja::reads_variable(t, "bos_token", "t"));
  EXPECT_FALSE(jinja::reads_variable(t, "eos_token", "t"));
  EXPECT_EQ(jinja::make_variable_literal(t, "eos_token", "</s>", "t"), t);
  const std::string mixed = "{{ eos_token }}{% macro m(eos_token) %}{{ eos_token }}{% endmacro %}";
  EXPECT_EQ(jinja::make_variable_literal(mixed, "eos_token", "</s>", "t"),
            "{{ '</s>' }}{% macro m(eos_token) %}{{ eos_token }}{% endmacro %}");
}

TEST(TemplateEdits, ReadsThatDependOnTheConversationAreRefusedWithTheirLine) {
  const std::string t = "{% if x %}{% set bos_token = '' %}{% endif %}\n{{ bos_token }}";
  try {
    jinja::reads_variable(t, "bos_token", "t.jinja");
    FAIL() << "accepted";
  } catch (const Unsupported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.jinja: chat template, line 2, column 4"), std::string::npos) << m;
    EXPECT_NE(m.find("bound at line 1, column 11"), std::string::npos) << m;
  }
}

TEST(TemplateEdits, LoneBosPrintDisappearsAndMarkedOneKeepsItsMarks) {
  EXPECT_EQ(jinja::make_variable_literal("{{ bos_token }}x{{- bos_token }}{% if bos_token %}y{% endif %}", "bos_token",
                                         "", "t"),
            "x{{- '' }}{% if '' %}y{% endif %}");
}

TEST(HailortTemplate, GuardsDisarmedAndTokensLiteralAreRecorded) {
  const std::string t =
      "{{ bos_token }}{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
      "{{ m['content'] + eos_token }}{% endfor %}";
  std::vector<std::string> changes;
  SpecialTokenTexts tokens;
  tokens.bos = "<s>";
  tokens.eos = "</s>";
  const std::string out = template_for_hailort(t, "t.jinja", tokens, changes);
  EXPECT_EQ(out, "{{ '<s>' }}{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ " +
                     spared("raise_exception('Conversation roles must alternate user/assistant/user/assistant/...')") +
                     " }}{% endif %}{{ m['content'] + '</s>' }}{% endfor %}");
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_NE(changes[0].find("Conversation roles must alternate"), std::string::npos);
  EXPECT_NE(changes[0].find("'TMP'"), std::string::npos);
  EXPECT_NE(changes[1].find("BOS '<s>'"), std::string::npos);
  EXPECT_NE(changes[2].find("'</s>'"), std::string::npos);
}

TEST(HailortTemplate, TemplateWithoutGuardsOrTokensIsUnchanged) {
  const std::string t = "{% for m in messages %}{{ '<|im_start|>' + m['role'] }}{% endfor %}";
  std::vector<std::string> changes;
  EXPECT_EQ(template_for_hailort(t, "t", {}, changes), t);
  EXPECT_TRUE(changes.empty());
}

TEST(HailortTemplate, CallBlocksAreRefusedNamingTheLine) {
  const std::string t = "{% macro m() %}{{ caller() }}{% endmacro %}\n{% call m() %}x{% endcall %}";
  try {
    refuse_what_hailort_cannot_parse(t, "chat_template.jinja");
    FAIL() << "a call block was accepted";
  } catch (const Unsupported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("chat_template.jinja: chat template, line 2, column 1"), std::string::npos) << m;
    EXPECT_NE(m.find("{% call %}"), std::string::npos) << m;
    EXPECT_NE(m.find("--chat-template"), std::string::npos) << m;
  }
}

TEST(HailortTemplate, EveryStatementAndTestMinjaCannotParseIsRefused) {
  for (const char* t :
       {"{% raw %}x{% endraw %}", "{% include 'a' %}", "{% import 'a' as b %}", "{% extends 'a' %}",
        "{% with a = 1 %}{% endwith %}", "{% block a %}{% endblock %}", "{% if 4 is divisibleby(2) %}{% endif %}",
        "{{ 'a' is in ['a'] }}", "{{ a is not sameas b }}"}) {
    std::string m = message_of([&] { refuse_what_hailort_cannot_parse(t, "t"); });
    EXPECT_NE(m.find("does not parse"), std::string::npos) << t << ": " << m;
  }
}

TEST(HailortTemplate, WhatMinjaCannotRenderIsWarnedWithItsLine) {
  const std::string t =
      "{{ messages|first }}\n{{ m.content.upper() }}{% if x is undefined %}{% endif %}{{ dict(a=1) }}"
      "{{ s.split() }}{{ x|tojson(ensure_ascii=False) }}{{ messages[::-1] }}{{ a.startswith('b') }}"
      "{{ messages|length }}{{ s.split(',') }}{{ x|tojson(indent=2) }}{{ x is defined }}";
  // `[::-1]` and startswith are what only hailo-ollama's older minja lacks: older_minja.hpp's.
  const std::vector<std::string> w = what_minja_cannot_render(t, "t");
  ASSERT_EQ(w.size(), 6u);
  EXPECT_NE(w[0].find("line 1, column 13 uses the filter 'first'"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("line 2, column 14 uses the method 'upper'"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("test 'undefined'"), std::string::npos) << w[2];
  EXPECT_NE(w[3].find("function 'dict'"), std::string::npos) << w[3];
  EXPECT_NE(w[4].find("split() without a separator"), std::string::npos) << w[4];
  EXPECT_NE(w[5].find("tojson 'ensure_ascii'"), std::string::npos) << w[5];
}

// ---- hailo-ollama's older minja (older_minja.hpp) ----

std::string older(const std::string& t, std::vector<jinja::OlderMinjaFinding>* rewritten = nullptr) {
  std::vector<jinja::OlderMinjaFinding> r, left;
  std::string out = jinja::rewrite_for_older_minja(t, "t.jinja", r, left);
  EXPECT_EQ(jinja::older_minja_findings(t, "t.jinja").size(), r.size() + left.size()) << t;
  for (const jinja::OlderMinjaFinding& f : left) EXPECT_FALSE(f.rewritable) << t;
  if (rewritten) *rewritten = r;
  return out;
}

TEST(OlderMinja, ReversedLoopBecomesACountdownOverTheListBoundOnce) {
  std::vector<jinja::OlderMinjaFinding> r;
  EXPECT_EQ(older("a\n  {%- for m in ns.msgs[1:][::-1] -%}\n{{ m }}{% endfor %}", &r),
            "a\n  {%- set llm2hef_reversed_1 = ns.msgs[1:] %}{%- for llm2hef_index_1 in "
            "range((llm2hef_reversed_1|length) - 1, -1, -1) -%}{% set m = llm2hef_reversed_1[llm2hef_index_1] -%}"
            "\n{{ m }}{% endfor %}");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].at, "line 2, column 27");
  EXPECT_TRUE(r[0].rewritable);
  // Two loops: fresh names each, skipping a name the template has.
  EXPECT_EQ(older("{% for a in x[::-1] %}{% for b in y[::-1] %}{{ llm2hef_index_1 }}{% endfor %}{% endfor %}"),
            "{% set llm2hef_reversed_2 = x %}{% for llm2hef_index_2 in range((llm2hef_reversed_2|length) - 1, -1, -1) "
            "%}{% set a = llm2hef_reversed_2[llm2hef_index_2] %}{% set llm2hef_reversed_3 = y %}{% for llm2hef_index_3 "
            "in range((llm2hef_reversed_3|length) - 1, -1, -1) %}{% set b = llm2hef_reversed_3[llm2hef_index_3] "
            "%}{{ llm2hef_index_1 }}{% endfor %}{% endfor %}");
}

TEST(OlderMinja, WhatHasNoExactEquivalentIsLeftAndFound) {
  for (const std::string t : {
           "{% for m in a + b[::-1] %}{% endfor %}",                 // the slice is b's only
           "{% for m in x[::-1] if m %}{% endfor %}",                // a loop filter reads the item
           "{% for k, v in x[::-1] %}{% endfor %}",                  // a tuple target
           "{% for m in x[::-1] %}{{ loop.previtem }}{% endfor %}",  // would be an index
           "{{ x[::2] }}",                                           // a step other than -1
           "{{ x[::-1] }}",                                          // not a loop's iterable
           "{{ s.startswith(p) }}",                                  // not a literal
           "{{ s.startswith('\\x41') }}",                            // not a plain literal
           "{{ s.startswith('é') }}",                                // not ASCII: bytes and characters differ
           "{{ s.startswith('a').x }}",                              // more postfix after the call
           "{{ s|trim.startswith('a') }}",                           // a filter's name
           "{{ s.replace('a', 'b') }}",                              // no equivalent
           "{{ 'a' in f(x) }}",                                      // the operand calls something
           "{{ '' in x }}",                                          // empty: split('') raises
           "{{ 'a' in x|list }}",                                    // a filter after the operand
           "{{ f(x) is true }}",                                     // the operand calls something
       }) {
    std::vector<jinja::OlderMinjaFinding> r;
    EXPECT_EQ(older(t, &r), t) << t;
    EXPECT_TRUE(r.empty()) << t;
    const std::vector<jinja::OlderMinjaFinding> f = jinja::older_minja_findings(t, "t");
    ASSERT_EQ(f.size(), 1u) << t;
    EXPECT_FALSE(f[0].rewritable) << t;
  }
  EXPECT_NE(jinja::older_minja_findings("{% for m in x[::-1] %}{{ loop.nextitem }}{% endfor %}", "t")[0].construct.find(
                "loop.nextitem"),
            std::string::npos);
}

TEST(OlderMinja, ExactRewrites) {
  const std::pair<std::string, std::string> cases[] = {
      {"{{ m.content.startswith('<x>') }}", "{{ (m.content[:3] == '<x>') }}"},
      {"{{ not m['c'].strip().startswith(\"a\\n\") }}", "{{ not (m['c'].strip()[:2] == \"a\\n\") }}"},
      {"{{ x[:] }}{{ x[::] }}{{ x[1::1] }}{{ x[:2:] }}", "{{ x[0:] }}{{ x[0:] }}{{ x[1:] }}{{ x[:2] }}"},
      {"{% if '</t>' in c %}", "{% if ('</t>' in c if c is not string else (c.split('</t>')|length) > 1) %}"},
      {"{{ a and 'k' not in m.d }}",
       "{{ a and (not ('k' in m.d if m.d is not string else (m.d.split('k')|length) > 1)) }}"},
      {"{{ 'a' in ['a', 'b'] }}", "{{ 'a' in ['a', 'b'] }}"},  // membership: the older minja has it
      {"{{ x is false }}{{ y.z is not true }}", "{{ (x is boolean and not x) }}{{ (not (y.z is boolean and y.z)) }}"},
      {"{{ x[1:2] }}{{ s.endswith('a') }}", "{{ x[1:2] }}{{ s.endswith('a') }}"},  // the older minja has these
  };
  for (const auto& [in, out] : cases) {
    EXPECT_EQ(older(in), out) << in;
    EXPECT_TRUE(jinja::older_minja_findings(older(in), "t").empty()) << in;
  }
}

TEST(OlderMinja, ARewriteHoldingAnotherConstructIsNotMade) {
  // The startswith would copy the step slice inside it: the slice stays a finding, so does the call.
  const std::string t = "{{ x[::2].startswith('a') }}";
  EXPECT_EQ(older(t), t);
  EXPECT_EQ(jinja::older_minja_findings(t, "t").size(), 2u);
  // Inside one that is not rewritten, a construct still is.
  EXPECT_EQ(older("{{ (x[:] ~ 'b').startswith('a') }}"), "{{ (x[0:] ~ 'b').startswith('a') }}");
}

TEST(OlderMinja, TemplateForHailortRecordsRewritesAndWarnsAboutTheRest) {
  std::vector<std::string> changes;
  const std::string out =
      template_for_hailort("{% for m in messages[::-1] %}{{ m.c.replace('a', 'b') }}{% endfor %}", "t", {}, changes);
  EXPECT_EQ(out.find("[::-1]"), std::string::npos);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_NE(changes[0].find("line 1, column 21: the loop 'for m in ...[::-1]'"), std::string::npos) << changes[0];
  EXPECT_NE(changes[0].find("rewritten"), std::string::npos) << changes[0];
  EXPECT_NE(changes[1].find("warning: line 1, column 37: the string method 'replace'"), std::string::npos)
      << changes[1];
  EXPECT_NE(changes[1].find("--force-template"), std::string::npos) << changes[1];
}

TEST(OlderMinja, SummaryCountsRepeats) {
  const std::vector<std::string> s =
      jinja::older_minja_summary(jinja::older_minja_findings("{{ a[::2] }}\n{{ a[::2] }}{{ b.replace(1, 2) }}", "t"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0], "line 1, column 5: the slice '[::2]' (a slice with a step) (and at 1 more places)");
  EXPECT_EQ(s[1], "line 2, column 18: the string method 'replace'");
}

TEST(HailortTemplate, MalformedBlocksAreRefused) {
  EXPECT_NE(message_of([] { refuse_what_hailort_cannot_parse("{% if a %}x", "t"); }).find("expected '{% endif %}'"),
            std::string::npos);
  EXPECT_NE(message_of([] {
              refuse_what_hailort_cannot_parse("{% for a in b %}{% endif %}", "t");
            }).find("'{% endif %}' where '{% endfor %}' was expected"),
            std::string::npos);
  EXPECT_NE(message_of([] { refuse_what_hailort_cannot_parse("{% elif a %}", "t"); }).find("outside an if block"),
            std::string::npos);
  EXPECT_EQ(message_of([] {
              refuse_what_hailort_cannot_parse(
                  "{% for a in b %}{% if a %}{% elif c %}{% else %}{% endif %}{% else %}{% endfor %}"
                  "{% set x %}y{% endset %}{% set z = 1 %}",
                  "t");
            }),
            "");
}

TEST(HailortTemplate, BosReadWithoutABosIsRefused) {
  std::vector<std::string> changes;
  EXPECT_THROW(template_for_hailort("{{ bos_token }}x", "t", {}, changes), BadInput);
}
