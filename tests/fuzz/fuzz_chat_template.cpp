// libFuzzer target for the chat-template lexer, scopes and edits
// (core/src/chat) alone: any text as a template, through what export does to
// it (template_for_hailort) and what `hef check` runs on a stored one.
//
// The first byte picks the special tokens (bit 0: a BOS, bit 2: one that
// looks like template code; bit 1: an EOS; bit 3: the post-processor adds the
// BOS); the rest is the template. Any input must either be refused with
// BadInput / Unsupported, or give a template that lexes again, reads neither
// bos_token nor eos_token of the context, and spares the placeholder
// conversation at every raise_exception call. Anything else (another
// exception, a sanitizer report, a timeout: every pass is linear) is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "llm2hef/core/chat/hailort_template.hpp"
#include "llm2hef/core/chat/jinja_lexer.hpp"
#include "llm2hef/core/chat/older_minja.hpp"
#include "llm2hef/core/chat/template_edits.hpp"
#include "llm2hef/core/chat/template_scopes.hpp"
#include "llm2hef/sdk/errors.hpp"

using namespace llm2hef;
using namespace llm2hef::core;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const std::string tmpl(reinterpret_cast<const char*>(data + 1), size - 1);
  SpecialTokenTexts tokens;
  if (flags & 1) tokens.bos = (flags & 4) ? "{{ raise_exception('b') }}{% raw %}" : "<s>";
  if (flags & 2) tokens.eos = "</s>";
  tokens.prepend_bos = (flags & 8) != 0;

  // What `hef check` runs on a template it did not write.
  try {
    (void)what_minja_cannot_render(tmpl, "fuzz.jinja");
    (void)jinja::unspared_raise_calls(tmpl, "fuzz.jinja");
    (void)jinja::older_minja_findings(tmpl, "fuzz.jinja");
    const std::vector<jinja::Segment> segments = jinja::split(tmpl, "fuzz.jinja");
    for (const char* name : {"bos_token", "eos_token", "x"}) (void)jinja::reads_of(tmpl, segments, name, "fuzz.jinja");
  } catch (const BadInput&) {
  } catch (const Unsupported&) {
  }

  std::vector<std::string> changes;
  std::string out;
  try {
    out = template_for_hailort(tmpl, "fuzz.jinja", tokens, changes);
  } catch (const BadInput&) {
    return 0;
  } catch (const Unsupported&) {
    return 0;
  }
  try {
    if (!jinja::unspared_raise_calls(out, "out").empty()) __builtin_trap();
    if (jinja::reads_variable(out, "bos_token", "out") || jinja::reads_variable(out, "eos_token", "out"))
      __builtin_trap();
  } catch (const Error&) {
    __builtin_trap();  // the edited template must read as well as the original did
  }
  return 0;
}
