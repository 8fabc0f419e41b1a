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
