#include "llm2hef/core/chat/template_scopes.hpp"

#include <algorithm>
#include <tuple>

#include "llm2hef/sdk/errors.hpp"

namespace llm2hef::core::jinja {

namespace {

// How a block's body relates to the code around it.
enum class FrameKind {
  scope,     // runs where it stands, binds of its own ('for', 'filter', ...)
  deferred,  // a scope that runs later, when called (macro, block)
  branch,    // not a scope: an 'if' branch, which may or may not run
};

// The template reduced to what matters for one name, in template order.
struct Event {
  enum Type { open, close, bind, read } type = read;
  FrameKind kind = FrameKind::branch;  // open
  bool binds = false;                  // open: a parameter or loop target of that name
  bool own_target = false;             // open: the body of a block `set` of that name
  size_t at = 0, end = 0;              // offsets: the statement, the binding statement, the read token
  size_t segment = 0;                  // read
};

bool is_op(std::string_view tmpl, const Token& t, std::string_view op) {
  return t.kind == TokenKind::op && text_of(tmpl, t) == op;
}
bool is_name(std::string_view tmpl, const Token& t, std::string_view name) {
  return t.kind == TokenKind::name && text_of(tmpl, t) == name;
}
bool opens(std::string_view tmpl, const Token& t) {
  return is_op(tmpl, t, "(") || is_op(tmpl, t, "[") || is_op(tmpl, t, "{");
}
bool closes(std::string_view tmpl, const Token& t) {
  return is_op(tmpl, t, ")") || is_op(tmpl, t, "]") || is_op(tmpl, t, "}");
}

// Turns a template's segments into Events for one name, checking that end
// tags close the block that is open.
class EventBuilder {
 public:
  EventBuilder(std::string_view tmpl, std::string_view name, const std::string& origin)
      : tmpl_(tmpl), name_(name), origin_(origin) {}

  std::vector<Event> events;

  void expression(size_t segment, const std::vector<Token>& t) { reads(segment, t, 0, t.size()); }

  void statement(size_t segment, const Segment& seg, const std::vector<Token>& t) {
    if (t.empty() || t[0].kind != TokenKind::name) return;
    const std::string_view k = text_of(tmpl_, t[0]);
    segment_ = segment;
    seg_ = &seg;
    if (k == "for") return for_statement(t);
    if (k == "if") {
      reads(segment, t, 1, t.size());
      return open(FrameKind::branch, "endif");
    }
    if (k == "elif" || k == "else") return next_branch(k, t);
    if (k == "macro") return macro_statement(t);
    if (k == "call") return call_statement(t);
    if (k == "set") return set_statement(t);
    if (k == "filter") {
      reads(segment, t, 2, t.size());  // t[1] is the filter's name
      return open(FrameKind::scope, "endfilter");
    }
    if (k == "with") {
      // `with a = x, b = y`: the targets look like keyword arguments, which
      // are not reads; the values are read outside.
      reads(segment, t, 1, t.size());
      bool binds = false;
      for (size_t i = 1; i + 1 < t.size(); ++i) binds |= is_name(tmpl_, t[i], name_) && is_op(tmpl_, t[i + 1], "=");
      return open(FrameKind::scope, "endwith", binds);
    }
    if (k == "generation" || k == "autoescape") {
      reads(segment, t, 1, t.size());
      return open(FrameKind::scope, k == "generation" ? "endgeneration" : "endautoescape");
    }
    if (k == "block") return open(FrameKind::deferred, "endblock");
    if (k == "import" || k == "from") return import_statement(k, t);
    if (k.substr(0, 3) == "end") return end_statement(k);
    // do, include, extends, print and the rest: expressions read where they stand.
    reads(segment, t, 1, t.size());
  }

 private:
  struct Open {
    std::string_view close;
    size_t at;
    bool binds_on_close = false;  // a block `set` of the name: bound after its `endset`
    bool for_loop = false;        // accepts `else`
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw BadInput(origin_ + ": chat template, " + where(tmpl_, seg_->begin) + ": " + what);
  }

  // Whether t[i], a name, is read as a variable: not an attribute, a keyword
  // argument (or `with` target), a filter or a test name.
  bool is_read(const std::vector<Token>& t, size_t i) const {
    if (i > 0 && (is_op(tmpl_, t[i - 1], ".") || is_op(tmpl_, t[i - 1], "|") || is_name(tmpl_, t[i - 1], "is")))
      return false;
    if (i > 1 && is_name(tmpl_, t[i - 1], "not") && is_name(tmpl_, t[i - 2], "is")) return false;
    return !(i + 1 < t.size() && is_op(tmpl_, t[i + 1], "="));
  }

  void reads(size_t segment, const std::vector<Token>& t, size_t from, size_t to) {
    for (size_t i = from; i < to && i < t.size(); ++i)
      if (is_name(tmpl_, t[i], name_) && is_read(t, i))
        events.push_back({Event::read, FrameKind::branch, false, false, t[i].begin, t[i].end, segment});
  }

  void bind(size_t at) { events.push_back({Event::bind, FrameKind::branch, false, false, at, at, 0}); }

  void open(FrameKind kind, std::string_view close, bool binds = false, bool own_target = false) {
    events.push_back({Event::open, kind, binds, own_target, seg_->begin, seg_->end, 0});
    open_.push_back({close, seg_->begin});
  }

  void close() {
    events.push_back({Event::close, FrameKind::branch, false, false, seg_->begin, seg_->end, 0});
    open_.pop_back();
  }

  // The first token from `from` on that is the name `word` outside brackets.
  size_t find_top_level(const std::vector<Token>& t, size_t from, std::string_view word, bool op = false) const {
    int depth = 0;
    for (size_t i = from; i < t.size(); ++i) {
      if (opens(tmpl_, t[i])) ++depth;
      if (closes(tmpl_, t[i])) --depth;
      if (depth == 0 && (op ? is_op(tmpl_, t[i], word) : is_name(tmpl_, t[i], word))) return i;
    }
    return t.size();
  }

  bool names_the_name(const std::vector<Token>& t, size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i)
      if (is_name(tmpl_, t[i], name_)) return true;
    return false;
  }

  // `for TARGETS in ITERABLE [if FILTER] [recursive]`: the iterable is read
  // outside the loop, the filter inside it (with the targets bound).
  void for_statement(const std::vector<Token>& t) {
    const size_t in = find_top_level(t, 1, "in");
    size_t end = find_top_level(t, in, "if");
    const size_t recursive = find_top_level(t, in, "recursive");
    end = std::min(end, recursive);
    reads(segment_, t, in + 1, end);
    open(FrameKind::scope, "endfor", names_the_name(t, 1, std::min(in, t.size())));
    open_.back().for_loop = true;
    if (end < t.size() && is_name(tmpl_, t[end], "if")) reads(segment_, t, end + 1, recursive);
  }

  void next_branch(std::string_view k, const std::vector<Token>& t) {
    const bool in_if = !open_.empty() && open_.back().close == "endif";
    const bool in_for = !open_.empty() && open_.back().for_loop;
    if (!in_if && !(k == "else" && in_for)) fail("'{% " + std::string(k) + " %}' outside an if block");
    close();
    if (in_for) {
      // A loop's `else` runs in a scope of its own, without the loop's targets.
      open(FrameKind::scope, "endfor");
      return;
    }
    reads(segment_, t, 1, t.size());  // an elif's condition
    open(FrameKind::branch, "endif");
  }

  // Parameters of a `macro NAME(...)` or `call(...)` list opening at t[lparen],
  // the defaults' reads among the events. Returns the index after the closing
  // ')' and whether a parameter is the name.
  std::pair<size_t, bool> parameters(const std::vector<Token>& t, size_t lparen) {
    bool binds = false;
    int depth = 0;
    size_t i = lparen;
    for (; i < t.size(); ++i) {
      if (opens(tmpl_, t[i])) ++depth;
      if (closes(tmpl_, t[i]) && --depth == 0) break;
      const bool starts_parameter = depth == 1 && (is_op(tmpl_, t[i - 1], "(") || is_op(tmpl_, t[i - 1], ","));
      if (i > lparen && starts_parameter && is_name(tmpl_, t[i], name_)) binds = true;
      if (i > lparen && !starts_parameter && is_name(tmpl_, t[i], name_) && is_read(t, i)) reads(segment_, t, i, i + 1);
    }
    return {std::min(i + 1, t.size()), binds};
  }

  void macro_statement(const std::vector<Token>& t) {
    bool binds = false;
    if (t.size() > 2 && is_op(tmpl_, t[2], "(")) {
      // The defaults are evaluated when the macro is called, in the scope
      // around it (jinja2 3.1: a default reads a `set` made after the
      // definition): a body of their own, deferred like the macro's.
      events.push_back({Event::open, FrameKind::deferred, false, false, seg_->begin, seg_->end, 0});
      binds = parameters(t, 2).second;
      events.push_back({Event::close, FrameKind::branch, false, false, seg_->begin, seg_->end, 0});
    }
    // The macro's name is bound from here on (the body may call itself).
    if (t.size() > 1 && is_name(tmpl_, t[1], name_)) bind(seg_->begin);
    open(FrameKind::deferred, "endmacro", binds);
  }

  // `call[(PARAMETERS)] EXPR`: EXPR is read outside; the body, called back
  // by the macro while the statement runs, binds the parameters.
  void call_statement(const std::vector<Token>& t) {
    size_t from = 1;
    bool binds = false;
    if (t.size() > 1 && is_op(tmpl_, t[1], "(")) std::tie(from, binds) = parameters(t, 1);
    reads(segment_, t, from, t.size());
    open(FrameKind::scope, "endcall", binds);
  }

  void set_statement(const std::vector<Token>& t) {
    const size_t eq = find_top_level(t, 1, "=", /*op=*/true);
    if (eq == t.size()) {
      // `set NAME [| filters]` ... `endset`: the body is a scope; the name is
      // bound when the block ends.
      reads(segment_, t, 2, t.size());
      const bool own = t.size() > 1 && is_name(tmpl_, t[1], name_);
      open(FrameKind::scope, "endset", false, own);
      open_.back().binds_on_close = own;
      return;
    }
    reads(segment_, t, eq + 1, t.size());  // the value, before the targets are bound
    for (size_t i = 1; i < eq; ++i) {
      if (!is_name(tmpl_, t[i], name_) || is_op(tmpl_, t[i - 1], ".")) continue;
      if (i + 1 < eq && is_op(tmpl_, t[i + 1], "."))
        reads(segment_, t, i, i + 1);  // `set ns.attr = ...` reads ns
      else
        bind(seg_->begin);
    }
  }

  // `import EXPR as NAME`, `from EXPR import A [as B], ...`: the names bound.
  void import_statement(std::string_view k, const std::vector<Token>& t) {
    const size_t names = find_top_level(t, 1, k == "import" ? "as" : "import");
    reads(segment_, t, 1, names);
    for (size_t i = names + 1; i < t.size(); ++i) {
      if (!is_name(tmpl_, t[i], name_)) continue;
      if (i + 1 < t.size() && is_name(tmpl_, t[i + 1], "as")) continue;  // imported under another name
      bind(seg_->begin);
    }
  }

  void end_statement(std::string_view k) {
    static constexpr std::string_view kEnds[] = {"endif",     "endfor",  "endmacro",      "endcall",  "endset",
                                                 "endfilter", "endwith", "endgeneration", "endblock", "endautoescape"};
    if (std::find(std::begin(kEnds), std::end(kEnds), k) == std::end(kEnds)) return;  // endraw, or not a block tag
    if (open_.empty()) fail("'{% " + std::string(k) + " %}' closes no open block");
    if (open_.back().close != k)
      fail("'{% " + std::string(k) + " %}' where '{% " + std::string(open_.back().close) +
           " %}' was expected (block opened at " + where(tmpl_, open_.back().at) + ")");
    const bool binds = open_.back().binds_on_close;
    const size_t opened_at = open_.back().at;
    close();
    if (binds) bind(opened_at);
  }

  std::string_view tmpl_, name_;
  const std::string& origin_;
  std::vector<Open> open_;
  size_t segment_ = 0;
  const Segment* seg_ = nullptr;
};

// A block being walked, with what a read in it would refer to so far.
struct Frame {
  size_t id = 0;         // in the order blocks open (the root is 0)
  size_t scope_pos = 0;  // stack index of the innermost scope at or below this frame
  // Frames from this one down to its scope that bind the name for sure (a
  // parameter, a target, a `set` met in them); and where the nearest did.
  size_t definite = 0;
  size_t local_at = 0;
  bool bound_here = false;
  // Scopes: a `set` of the name has run in one of their branches (bound, or
  // not, after it); the block `set` of the name this is the body of; what a
  // read refers to when the scope does not bind it.
  bool maybe = false;
  size_t maybe_at = 0;
  bool own_target = false;
  size_t own_at = 0;
  Referent outer = Referent::context;
  size_t outer_at = 0;
};

// Which scopes bind the name anywhere (a macro body reads its scope's
// variables as they are when it is called, which may be later), and where
// each first does; indexed by scope id (the root is 0).
struct ScopeBinds {
  std::vector<bool> binds{false};
  std::vector<size_t> at{0};
};

ScopeBinds scopes_binding(const std::vector<Event>& events) {
  ScopeBinds out;
  std::vector<size_t> scope_of{0};  // per open frame: the id of its innermost scope
  size_t next_id = 1;
  for (const Event& e : events) {
    if (e.type == Event::open) {
      const size_t id = next_id++;
      out.binds.push_back(false);
      out.at.push_back(0);
      scope_of.push_back(e.kind == FrameKind::branch ? scope_of.back() : id);
    } else if (e.type == Event::close) {
      scope_of.pop_back();
    } else if (e.type == Event::bind && !out.binds[scope_of.back()]) {
      out.binds[scope_of.back()] = true;
      out.at[scope_of.back()] = e.at;
    }
  }
  return out;
}

// The second pass, in template order: every frame knows what a read in it
// refers to from its own binds, those of the frames between it and its
// scope, and the scope's `outer`, fixed when the scope opened (nothing
// outside a block can be bound while it is open). Constant work per event.
class Resolver {
 public:
  explicit Resolver(const ScopeBinds& scopes) : scopes_(scopes), stack_(1) {}

  void read(const Event& e, std::vector<NameRead>& out) const {
    NameRead r;
    r.segment = e.segment;
    r.begin = e.at;
    r.end = e.end;
    r.referent = referent_here(r.bound_at);
    out.push_back(r);
  }

  void bind(const Event& e) {
    Frame& f = stack_.back();
    if (!f.bound_here) ++f.definite;
    f.bound_here = true;
    f.local_at = e.at;
    Frame& s = stack_[f.scope_pos];
    if (!s.maybe) {
      s.maybe = true;
      s.maybe_at = e.at;
    }
  }

  void close() { stack_.pop_back(); }

  void open(const Event& e) {
    Frame f;
    f.id = next_id_++;
    if (e.kind == FrameKind::branch) {
      const Frame& parent = stack_.back();
      f.scope_pos = parent.scope_pos;
      f.definite = parent.definite;
      f.local_at = parent.local_at;
    } else {
      f.scope_pos = stack_.size();
      f.own_target = e.own_target;
      f.own_at = e.at;
      if (e.binds) {
        f.bound_here = true;
        f.definite = 1;
        f.local_at = e.at;
      }
      if (e.kind == FrameKind::scope)
        f.outer = referent_here(f.outer_at);
      else
        outer_of_macro(f);
    }
    stack_.push_back(f);
  }

 private:
  Referent referent_here(size_t& at) const {
    const Frame& f = stack_.back();
    const Frame& s = stack_[f.scope_pos];
    if (f.definite > 0) {
      at = f.local_at;
      return Referent::local;
    }
    if (s.own_target) {
      at = s.own_at;
      return Referent::unclear;
    }
    if (s.maybe) {
      at = s.maybe_at;
      return Referent::unclear;
    }
    at = s.outer_at;
    return s.outer;
  }

  // A macro body is called later: bound for sure only if bound before the
  // definition; bound anywhere else in its scope, it depends.
  void outer_of_macro(Frame& f) const {
    const Frame& parent = stack_.back();
    const Frame& s = stack_[parent.scope_pos];
    if (parent.definite > 0) {
      f.outer = Referent::local;
      f.outer_at = parent.local_at;
    } else if (s.own_target || scopes_.binds[s.id]) {
      f.outer = Referent::unclear;
      f.outer_at = s.own_target ? s.own_at : scopes_.at[s.id];
    } else {
      f.outer = s.outer;
      f.outer_at = s.outer_at;
    }
  }

  const ScopeBinds& scopes_;
  std::vector<Frame> stack_;
  size_t next_id_ = 1;
};

}  // namespace

std::vector<NameRead> reads_of(std::string_view tmpl, const std::vector<Segment>& segments, std::string_view name,
                               const std::string& origin) {
  EventBuilder builder(tmpl, name, origin);
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& seg = segments[i];
    if (seg.kind != SegmentKind::expression && seg.kind != SegmentKind::statement) continue;
    const std::vector<Token> tokens = tokenize(tmpl, seg, origin);
    if (seg.kind == SegmentKind::expression)
      builder.expression(i, tokens);
    else
      builder.statement(i, seg, tokens);
  }
  const std::vector<Event>& events = builder.events;
  const ScopeBinds scopes = scopes_binding(events);
  Resolver resolver(scopes);
  std::vector<NameRead> out;
  for (const Event& e : events) {
    switch (e.type) {
      case Event::read: resolver.read(e, out); break;
      case Event::bind: resolver.bind(e); break;
      case Event::close: resolver.close(); break;
      case Event::open: resolver.open(e); break;
    }
  }
  return out;
}

}  // namespace llm2hef::core::jinja
