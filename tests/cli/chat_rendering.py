"""Chat templates rendered by a real Jinja engine (jinja2), the ways that matter
to a model on the Hailo-10H:

* as Hugging Face renders them (the reference): transformers'
  apply_chat_template renders with an ImmutableSandboxedEnvironment with
  trim_blocks and lstrip_blocks, the loopcontrols extension, a tojson filter
  that keeps non-ASCII text, and raise_exception and strftime_now globals,
  passing the tokenizer's special tokens (bos_token, eos_token) as variables;
* as hailort's genai renders them (hailo-contract.md section 6, "The load
  probe"): minja's chat_template(template, "", "") -- bos_token and eos_token
  empty -- applied once at load to one placeholder message of role "TMP" with
  add_generation_prompt false (the probe; its output is kept), then to the
  user's messages with add_generation_prompt true; on later turns to the
  placeholder followed by the new messages, from which the probe's output is
  cut (hailort v5.2.0 minja_wrapper.cpp lines 18, 42-47, 61-91);
* as hailo-ollama renders them: with the manifest's bos_token and eos_token
  (hailo_model_zoo_genai v5.1.1 controller.cpp 581-596).

jinja2 is not minja: docs/chat-templates.md lists how they differ (minja's
missing filters and statements, which export checks by itself, its
system-role polyfill, its stripping of spaces before `{{`). The edits llm2hef
makes keep the text between tags as it is, so those differences affect the
original and the edited template alike.
"""
from __future__ import annotations

import json
from datetime import datetime

from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

PLACEHOLDER = {"role": "TMP", "content": "TMP"}


def bos_print(bos: str) -> str:
    """How export puts the BOS in front of the stored template: printed as a Jinja string
    literal, so that a BOS text that looks like template code is never run as code."""
    escaped = bos.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\r", "\\r")
    return "{{ '" + escaped.replace("\t", "\\t") + "' }}"


class TemplateRaised(Exception):
    """raise_exception() was called by the template."""


def _raise_exception(message):
    raise TemplateRaised(message)


def _tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _environment() -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


def render(template: str, messages: list[dict], *, add_generation_prompt: bool, bos_token: str, eos_token: str) -> str:
    """Raises TemplateRaised when the template calls raise_exception."""
    compiled = _environment().from_string(template)
    return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt,
                           bos_token=bos_token, eos_token=eos_token)


def hailort_probe(template: str) -> str:
    """What hailort renders when it loads the model; an exception here is 'Failed to create LLM'."""
    return render(template, [PLACEHOLDER], add_generation_prompt=False, bos_token="", eos_token="")


def genai_first_turn(template: str, messages: list[dict]) -> str:
    return render(template, messages, add_generation_prompt=True, bos_token="", eos_token="")


def genai_later_turn(template: str, messages: list[dict]) -> tuple[str, str]:
    """(the whole rendering of placeholder + messages, the probe output hailort cuts from its front)."""
    whole = render(template, [PLACEHOLDER, *messages], add_generation_prompt=True, bos_token="", eos_token="")
    return whole, hailort_probe(template)


# Well-formed conversations: what a chat user sends, first turn.
CONVERSATIONS = {
    "user": [{"role": "user", "content": "What is the capital of France?"}],
    "system+user": [{"role": "system", "content": "You are a concise assistant."},
                    {"role": "user", "content": "What is the capital of France?"}],
    "user+assistant+user": [{"role": "user", "content": "Hi!"},
                            {"role": "assistant", "content": "Hello. How can I help?"},
                            {"role": "user", "content": " And the capital of Italy?\n"}],
    "system+user+assistant+user": [{"role": "system", "content": "Answer in one word."},
                                   {"role": "user", "content": "Capital of France?"},
                                   {"role": "assistant", "content": "Paris."},
                                   {"role": "user", "content": "Of Spain?"}],
}


# --- hailo-ollama's older minja --------------------------------------------------------------------------
#
# hailo-ollama v5.1.1 renders its manifest's template with the minja it vendors (google/minja ea5fe1b,
# include/minja/minja.hpp), older than hailort's (58568621). docs/chat-templates.md has the table; the rows
# these helpers encode, with that file's lines:
#   * slices with a step (`[a:b:c]`, `[::-1]`) and `[:]` do not parse (2084-2104): no request renders;
#   * strings have no .startswith() and no .replace() ("Unknown method", 1493-1533; .endswith() exists);
#   * `is true` / `is false` are unknown tests (1296-1308);
#   * `x in s` is false for every string s, and `x not in m` true for every mapping m (1338-1339).

# What both minja generations lack (hailort's table in docs/chat-templates.md; the globals, string methods and
# tests did not change between ea5fe1b and 58568621 but for those above): found where a template names them.
_MINJA_LACKS_FILTERS = {"first", "d", "replace", "capitalize", "title", "sort", "max", "min", "sum", "round",
                        "float", "abs", "wordcount", "batch", "groupby", "attr", "truncate", "format"}
_MINJA_LACKS_METHODS = {"upper", "lower", "join", "format", "find", "count", "keys", "values"}
_MINJA_LACKS_TESTS = {"undefined", "callable", "odd", "even", "lower", "upper"}
_VALUE_END = {"name", "string", "integer", "float"}
_KEYWORDS = {"and", "or", "not", "in", "is", "if", "elif", "else", "for", "recursive", "set", "with", "macro",
             "call", "filter", "do", "print", "import", "include", "from", "as", "block", "extends"}


def _code_segments(template: str) -> list[list[tuple[int, str, str]]]:
    """The tokens of each {{ }} and {% %}, by jinja2's own lexer (not llm2hef's), whitespace left out."""
    segments, current = [], None
    for lineno, kind, value in _environment().lex(template):
        if kind in ("variable_begin", "block_begin"):
            current = []
        elif kind in ("variable_end", "block_end"):
            segments.append(current)
            current = None
        elif current is not None and kind != "whitespace":
            current.append((lineno, kind, value))
    return segments


def _ends_value(tok) -> bool:
    _, kind, value = tok
    if kind == "name":
        return value not in _KEYWORDS
    return kind in _VALUE_END or (kind == "operator" and value in ")]}")


def older_minja_constructs(template: str) -> list[str]:
    """What `template` uses that hailo-ollama's older minja lacks (what hailort's lacks too), as 'line N: what';
    the substring-test form
    llm2hef writes (`'a' in B if B is not string else (B.split('a')|length) > 1`) is not one."""
    found = []
    for seg in _code_segments(template):
        values = [v for _, _, v in seg]
        for i, (line, kind, value) in enumerate(seg):
            if kind == "operator" and value == "[" and i > 0 and _ends_value(seg[i - 1]):
                depth, colons, j = 0, [], i + 1
                while not (depth == 0 and values[j] == "]"):
                    if values[j] in ("(", "[", "{"):
                        depth += 1
                    elif values[j] in (")", "]", "}"):
                        depth -= 1
                    elif depth == 0 and values[j] == ":":
                        colons.append(j)
                    j += 1
                if len(colons) == 2:
                    found.append(f"line {line}: slice with a step {''.join(values[i:j + 1])}")
                elif colons == [i + 1] and j == i + 2:
                    found.append(f"line {line}: slice without bounds [:]")
            elif value == "." and values[i + 1:i + 2] in (["startswith"], ["replace"]):
                found.append(f"line {line}: str.{values[i + 1]}()")
            elif value == "." and values[i + 1] in _MINJA_LACKS_METHODS and values[i + 2:i + 3] == ["("]:
                found.append(f"line {line}: method {values[i + 1]}()")
            elif value == "|" and values[i + 1] in _MINJA_LACKS_FILTERS:
                found.append(f"line {line}: filter {values[i + 1]}")
            elif kind == "name" and value in ("dict", "cycler") and values[i + 1:i + 2] == ["("] and \
                    values[i - 1:i] != ["."]:
                found.append(f"line {line}: function {value}()")
            elif kind == "name" and value == "is":
                test = values[i + 2] if values[i + 1:i + 2] == ["not"] else values[i + 1]
                if test in ("true", "false", "True", "False") or test in _MINJA_LACKS_TESTS:
                    found.append(f"line {line}: test 'is {test}'")
            elif kind == "string" and (values[i + 1:i + 2] == ["in"] or values[i + 1:i + 3] == ["not", "in"]):
                b = i + (2 if values[i + 1] == "in" else 3)
                if values[b] == "[":
                    continue  # a list literal: membership, which the older minja has
                end = values.index("if", b) if "if" in values[b:] else len(values)
                operand = values[b:end]
                form = ["if", *operand, "is", "not", "string", "else"]
                if values[end:end + len(form)] != form:
                    found.append(f"line {line}: substring test {value} in {''.join(operand)}")
    return found


class OlderMinjaStr(str):
    """A message text as the older minja treats strings: no startswith/replace, `x in s` always false."""

    def startswith(self, *args):
        raise TemplateRaised("older minja: Unknown method: startswith")

    def replace(self, *args):
        raise TemplateRaised("older minja: Unknown method: replace")

    def __contains__(self, item):
        return False

    def split(self, *args):
        return [OlderMinjaStr(p) for p in super().split(*args)]

    def strip(self, *args):
        return OlderMinjaStr(super().strip(*args))

    def lstrip(self, *args):
        return OlderMinjaStr(super().lstrip(*args))

    def rstrip(self, *args):
        return OlderMinjaStr(super().rstrip(*args))


class OlderMinjaList(list):
    """The messages as the older minja treats lists: a slice with a step does not parse."""

    def __getitem__(self, key):
        if isinstance(key, slice) and key.step is not None:
            raise TemplateRaised("older minja: slices with a step do not parse")
        return super().__getitem__(key)


def as_older_minja_sees(messages: list[dict]) -> list[dict]:
    return OlderMinjaList({k: OlderMinjaStr(v) if isinstance(v, str) else v for k, v in m.items()} for m in messages)


# Conversations that reach the branches Qwen3's templates rewrite: an earlier answer with its reasoning, a
# user message that is a tool response.
OLDER_MINJA_CONVERSATIONS = {
    "reasoning-in-history": [{"role": "user", "content": "2+2?"},
                             {"role": "assistant", "content": "<think>\nsimple\n</think>\n\n4."},
                             {"role": "user", "content": "And 3+3?"}],
    "tool-response-as-user": [{"role": "user", "content": "Weather?"},
                              {"role": "assistant", "content": "Calling the tool."},
                              {"role": "user", "content": "<tool_response>sunny</tool_response>"}],
}
