#include "llm2hef/core/chat/hailort_template.hpp"

#include <array>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/core/chat/older_minja.hpp"
#include "llm2hef/core/chat/template_edits.hpp"
#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core {

namespace {

using jinja::Segment;
using jinja::SegmentKind;
using jinja::Token;
using jinja::TokenKind;

// Statements that open a block, and the tag that closes each.
struct BlockTag {
  std::string_view open, close;
};
constexpr std::array<BlockTag, 8> kBlocks = {{{"if", "endif"},
                                              {"for", "endfor"},
                                              {"macro", "endmacro"},
                                              {"call", "endcall"},
                                              {"filter", "endfilter"},
                                              {"generation", "endgeneration"},
                                              {"with", "endwith"},
                                              {"block", "endblock"}}};

// Statements hailort's minja (google/minja 58568621, pinned by hailort
// v5.1-v5.2 cmake/external/minja.cmake) does not parse: its statement regex
// (minja.hpp line 2305) lacks them ("Expected block keyword"), or it refuses
// them ("Unexpected block", line 2441). The template then fails LLM::create.
// docs/chat-templates.md has the table with its evidence.
constexpr std::array<std::string_view, 11> kUnparsedStatements = {"call", "raw",     "include", "import",
                                                                  "from", "extends", "with",    "autoescape",
                                                                  "do",   "block",   "endblock"};

// Tests minja 58568621 does not parse: `is` takes a bare name and no
// argument there (minja.hpp 1896-1905).
constexpr std::array<std::string_view, 3> kUnparsedTests = {"divisibleby", "sameas", "in"};

// What that minja parses but cannot evaluate (minja.hpp 2636-2986: its
// globals, which are also its filters; 1462-1576: string, dict and list
// methods; 1316-1328: `is` tests): rendering fails when the line is reached.
// What the older minja of hailo-ollama lacks besides is older_minja.hpp's.
struct MissingFeature {
  enum Kind { filter, method, function, test } kind;
  std::string_view name;
};
constexpr MissingFeature kMissing[] = {
    {MissingFeature::filter, "first"},      {MissingFeature::filter, "d"},        {MissingFeature::filter, "replace"},
    {MissingFeature::filter, "capitalize"}, {MissingFeature::filter, "title"},    {MissingFeature::filter, "sort"},
    {MissingFeature::filter, "max"},        {MissingFeature::filter, "min"},      {MissingFeature::filter, "sum"},
    {MissingFeature::filter, "round"},      {MissingFeature::filter, "float"},    {MissingFeature::filter, "abs"},
    {MissingFeature::filter, "wordcount"},  {MissingFeature::filter, "batch"},    {MissingFeature::filter, "groupby"},
    {MissingFeature::filter, "attr"},       {MissingFeature::filter, "truncate"}, {MissingFeature::filter, "format"},
    {MissingFeature::function, "dict"},     {MissingFeature::function, "cycler"}, {MissingFeature::method, "upper"},
    {MissingFeature::method, "lower"},      {MissingFeature::method, "keys"},     {MissingFeature::method, "values"},
    {MissingFeature::method, "join"},       {MissingFeature::method, "format"},   {MissingFeature::method, "find"},
    {MissingFeature::method, "count"},      {MissingFeature::test, "undefined"},  {MissingFeature::test, "callable"},
    {MissingFeature::test, "odd"},          {MissingFeature::test, "even"},       {MissingFeature::test, "lower"},
    {MissingFeature::test, "upper"},
};

const char* kind_name(MissingFeature::Kind k) {
  switch (k) {
    case MissingFeature::filter: return "filter";
    case MissingFeature::method: return "method";
    case MissingFeature::function: return "function";
    case MissingFeature::test: return "test";
  }
  return "";
}

std::string_view keyword_of(std::string_view tmpl, const std::vector<Token>& tokens) {
  return !tokens.empty() && tokens[0].kind == TokenKind::name ? jinja::text_of(tmpl, tokens[0]) : std::string_view();
}

const BlockTag* opening(std::string_view keyword) {
  for (const BlockTag& b : kBlocks)
    if (b.open == keyword) return &b;
  return nullptr;
}

const BlockTag* closing(std::string_view keyword) {
  for (const BlockTag& b : kBlocks)
    if (b.close == keyword) return &b;
  return nullptr;
}

// `{% set name %}...{% endset %}` (a block) as opposed to `{% set name = value %}`.
bool is_block_set(std::string_view tmpl, const std::vector<Token>& tokens) {
  for (const Token& t : tokens)
    if (t.kind == TokenKind::op && jinja::text_of(tmpl, t) == "=") return false;
  return true;
}

// The BOS printed as a string literal: its text is the tokenizer's and may
// look like template code, which must not run (or fail) at every prompt.
std::string bos_print(const std::string& bos) { return "{{ " + jinja::string_literal(bos) + " }}"; }

// Whether the template's output starts with `bos` already: it starts with
// bos_print(bos), or with `bos` as plain text that no whitespace control can
// shorten (a BOS ending in a space, followed by spaces only up to a tag).
bool renders_first(const std::string& tmpl, const std::string& bos, const std::string& origin) {
  if (tmpl.rfind(bos_print(bos), 0) == 0) return true;
  if (bos.empty() || tmpl.rfind(bos, 0) != 0) return false;
  const std::vector<Segment> segments = jinja::split(tmpl, origin);
  if (segments.empty() || segments[0].kind != SegmentKind::text || segments[0].end < bos.size()) return false;
  if (!std::isspace(static_cast<unsigned char>(bos.back()))) return true;
  for (size_t i = bos.size(); i < segments[0].end; ++i)
    if (!std::isspace(static_cast<unsigned char>(tmpl[i]))) return true;
  return segments.size() == 1;
}

std::string text_of_keyword(std::string_view k) { return "'{% " + std::string(k) + " %}'"; }

// For each opening bracket token, the index of the one closing it; the
// token count for every other token (split() balanced the brackets).
std::vector<size_t> closing_brackets(std::string_view tmpl, const std::vector<Token>& tokens) {
  std::vector<size_t> close_of(tokens.size(), tokens.size()), open;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].kind != TokenKind::op) continue;
    const std::string_view t = jinja::text_of(tmpl, tokens[i]);
    if (t == "(" || t == "[" || t == "{") {
      open.push_back(i);
    } else if ((t == ")" || t == "]" || t == "}") && !open.empty()) {
      close_of[open.back()] = i;
      open.pop_back();
    }
  }
  return close_of;
}

// A special token's text as a message shows it.
std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

void refuse_what_hailort_cannot_parse(const std::string& tmpl, const std::string& origin) {
  struct Open {
    std::string_view close;
    size_t at;
  };
  std::vector<Open> open;
  const std::string hint =
      "; give export a template hailort can load with --chat-template FILE (docs/chat-templates.md lists what "
      "hailort's minja does not parse)";
  for (const Segment& seg : jinja::split(tmpl, origin)) {
    if (seg.kind != SegmentKind::statement) continue;
    const std::vector<Token> tokens = jinja::tokenize(tmpl, seg, origin);
    const std::string_view keyword = keyword_of(tmpl, tokens);
    for (std::string_view u : kUnparsedStatements)
      if (u == keyword)
        throw Unsupported(origin + ": chat template, " + jinja::where(tmpl, seg.begin) + ": uses " +
                          text_of_keyword(u) +
                          ", which the minja hailort renders templates with does not parse; "
                          "the model would fail to load (LLM::create)" +
                          hint);
    if (const BlockTag* b = opening(keyword)) {
      open.push_back({b->close, seg.begin});
    } else if (keyword == "set" && is_block_set(tmpl, tokens)) {
      open.push_back({"endset", seg.begin});
    } else if (closing(keyword) || keyword == "endset") {
      if (open.empty() || open.back().close != keyword)
        throw BadInput(origin + ": chat template, " + jinja::where(tmpl, seg.begin) + ": " + text_of_keyword(keyword) +
                       (open.empty()
                            ? " closes no open block"
                            : " where " + text_of_keyword(open.back().close) + " was expected (block opened at " +
                                  jinja::where(tmpl, open.back().at) + ")"));
      open.pop_back();
    } else if (keyword == "elif" || keyword == "else") {
      const bool inside =
          !open.empty() && (open.back().close == "endif" || (keyword == "else" && open.back().close == "endfor"));
      if (!inside)
        throw BadInput(origin + ": chat template, " + jinja::where(tmpl, seg.begin) + ": " + text_of_keyword(keyword) +
                       " outside an if block");
    }
  }
  if (!open.empty())
    throw BadInput(origin + ": chat template, " + jinja::where(tmpl, open.back().at) + ": block not closed (expected " +
                   text_of_keyword(open.back().close) + ")");
  // `is divisibleby(2)`, `is in [...]`: in expressions as in statements.
  for (const Segment& seg : jinja::split(tmpl, origin)) {
    if (seg.kind != SegmentKind::statement && seg.kind != SegmentKind::expression) continue;
    const std::vector<Token> tokens = jinja::tokenize(tmpl, seg, origin);
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      if (tokens[i].kind != TokenKind::name || jinja::text_of(tmpl, tokens[i]) != "is") continue;
      size_t t = i + 1;
      if (jinja::text_of(tmpl, tokens[t]) == "not" && t + 1 < tokens.size()) ++t;
      for (std::string_view u : kUnparsedTests)
        if (jinja::text_of(tmpl, tokens[t]) == u)
          throw Unsupported(origin + ": chat template, " + jinja::where(tmpl, tokens[i].begin) +
                            ": uses the test 'is " + std::string(u) +
                            "', which the minja hailort renders templates with does not parse "
                            "(its 'is' takes a bare name); the model would fail to load (LLM::create)" +
                            hint);
    }
  }
}

std::vector<std::string> what_minja_cannot_render(const std::string& tmpl, const std::string& origin) {
  // One warning per finding, at its first place, with the count of the others.
  struct Finding {
    size_t at, more;
  };
  std::vector<std::string> whats;  // in the order first found
  std::unordered_map<std::string, Finding> places;
  auto warn = [&](size_t at, std::string what) {
    auto [it, fresh] = places.try_emplace(what, Finding{at, 0});
    if (fresh)
      whats.push_back(std::move(what));
    else
      ++it->second.more;
  };
  auto note = [&](const MissingFeature& m, size_t at) {
    warn(at, std::string(" uses the ") + kind_name(m.kind) + " '" + std::string(m.name) +
                 "', which the minja hailort (and hailo-ollama) renders templates with does not have: rendering "
                 "fails when that line is reached (docs/chat-templates.md)");
  };
  auto lookup = [](MissingFeature::Kind kind, std::string_view name) -> const MissingFeature* {
    for (const MissingFeature& m : kMissing)
      if (m.kind == kind && m.name == name) return &m;
    return nullptr;
  };
  for (const Segment& seg : jinja::split(tmpl, origin)) {
    if (seg.kind != SegmentKind::statement && seg.kind != SegmentKind::expression) continue;
    const std::vector<Token> tokens = jinja::tokenize(tmpl, seg, origin);
    auto text = [&](size_t i) { return i < tokens.size() ? jinja::text_of(tmpl, tokens[i]) : std::string_view(); };
    const std::vector<size_t> close_of = closing_brackets(tmpl, tokens);
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].kind != TokenKind::name) continue;
      const bool after_pipe = i > 0 && text(i - 1) == "|";
      const bool after_filter_tag = i == 1 && text(0) == "filter" && seg.kind == SegmentKind::statement;
      const bool after_dot = i > 0 && text(i - 1) == ".";
      const bool called = text(i + 1) == "(";
      const bool after_is = i > 0 && (text(i - 1) == "is" || (text(i - 1) == "not" && i > 1 && text(i - 2) == "is"));
      const MissingFeature* m = nullptr;
      if (after_pipe || after_filter_tag)
        m = lookup(MissingFeature::filter, text(i));
      else if (after_dot && called)
        m = lookup(MissingFeature::method, text(i));
      else if (after_is)
        m = lookup(MissingFeature::test, text(i));
      else if (called)
        m = lookup(MissingFeature::function, text(i));
      if (m) note(*m, tokens[i].begin);
      if (after_dot && called && text(i) == "split" && text(i + 2) == ")")
        warn(tokens[i].begin,
             " calls split() without a separator, which the minja hailort renders templates with does not "
             "have (it takes exactly one): rendering fails when that line is reached");
      // tojson's own keyword arguments: those of its call, outside the
      // brackets nested in it (skipped whole, so each token is looked at once).
      if ((after_pipe || (after_dot && called)) && text(i) == "tojson" && called) {
        for (size_t j = i + 2; j < close_of[i + 1]; ++j) {
          if (close_of[j] != tokens.size()) {
            j = close_of[j];
            continue;
          }
          if (tokens[j].kind == TokenKind::name && text(j + 1) == "=" && text(j) != "indent")
            warn(tokens[j].begin, " passes tojson '" + std::string(text(j)) +
                                      "', which the minja hailort renders templates with refuses "
                                      "(its tojson takes value and indent): rendering fails when that line is reached");
        }
      }
    }
  }
  std::vector<std::string> found;
  const jinja::LineIndex lines(tmpl);
  for (const std::string& what : whats) {
    const Finding& f = places.at(what);
    found.push_back("chat_template: warning: " + lines.where(f.at) + what +
                    (f.more ? " (and at " + std::to_string(f.more) + " more places)" : std::string()));
  }
  return found;
}

std::string template_for_hailort(const std::string& original, const std::string& origin,
                                 const SpecialTokenTexts& tokens, std::vector<std::string>& changes) {
  refuse_what_hailort_cannot_parse(original, origin);
  for (std::string& w : what_minja_cannot_render(original, origin)) changes.push_back(std::move(w));

  // hailo-ollama renders the same template with its older minja: what that
  // lacks is rewritten where an exact equivalent exists (older_minja.hpp);
  // the rest is said here, and refused by `package`. On the template as its
  // file has it, so that the places the record names are the file's; the
  // rewrites add no line, so the guards' lines below are the file's too.
  std::vector<jinja::OlderMinjaFinding> rewritten, left;
  std::string tmpl = jinja::rewrite_for_older_minja(original, origin, rewritten, left);
  for (const std::string& r : jinja::older_minja_summary(rewritten))
    changes.push_back("chat_template: " + r +
                      " rewritten into an equivalent that hailo-ollama's older minja (v5.1.1) parses and evaluates; "
                      "Hugging Face renders the same text (docs/chat-templates.md)");
  for (const std::string& r : jinja::older_minja_summary(left))
    changes.push_back("chat_template: warning: " + r +
                      ": hailo-ollama's older minja (v5.1.1) lacks it and it has no exact rewrite, so `llm2hef "
                      "package` refuses this template unless --force-template (docs/chat-templates.md)");

  std::vector<jinja::DisarmedGuard> guards;
  tmpl = jinja::disarm_raise_calls(tmpl, origin, guards);
  for (const jinja::DisarmedGuard& g : guards)
    changes.push_back("chat_template: raise_exception('" + g.message + "') at " + g.at +
                      " skipped when the conversation starts with hailort's placeholder message (role 'TMP'): hailort "
                      "renders that message alone when it loads the model, and before each later turn, and an "
                      "exception stops the model from loading; every other conversation renders, or is refused, "
                      "exactly as before");

  // The runtime renders the template with bos_token and eos_token empty
  // (genai) or set from the ollama manifest (hailo-ollama), and adds no BOS
  // itself. A BOS belongs once at the very start of a prompt, so its reads are
  // dropped and the BOS is printed first, as a string literal; the EOS ends
  // turns inside the prompt, so each read becomes the literal text. Only the
  // reads of the variables the template is rendered with: a loop variable or
  // `set` of the same name is the template's own (template_scopes.hpp).
  const bool reads_bos = jinja::reads_variable(tmpl, "bos_token", origin);
  if (reads_bos) {
    if (!tokens.bos) throw BadInput(origin + ": uses bos_token, but no bos_token is defined");
    tmpl = jinja::make_variable_literal(tmpl, "bos_token", "", origin);
    changes.push_back("chat_template: bos_token references removed; BOS " + quoted(*tokens.bos) +
                      " rendered once at the start");
  }
  if ((reads_bos || tokens.prepend_bos) && tokens.bos && !renders_first(tmpl, *tokens.bos, origin)) {
    tmpl = bos_print(*tokens.bos) + tmpl;
    if (!reads_bos)
      changes.push_back("chat_template: BOS " + quoted(*tokens.bos) +
                        " prepended (the runtime ignores the tokenizer's post-processor, which added it)");
  }
  if (jinja::reads_variable(tmpl, "eos_token", origin)) {
    tmpl = jinja::make_variable_literal(tmpl, "eos_token", tokens.eos.value_or(""), origin);
    changes.push_back(tokens.eos ? "chat_template: eos_token references made the literal " + quoted(*tokens.eos) +
                                       " (genai renders eos_token empty, hailo-ollama with the manifest's text; "
                                       "Hugging Face renders the tokenizer's)"
                                 : std::string("chat_template: eos_token references made '' (the checkpoint defines no "
                                               "eos_token, so Hugging Face renders it empty too)"));
  }
  return tmpl;
}

}  // namespace llm2hef::core
