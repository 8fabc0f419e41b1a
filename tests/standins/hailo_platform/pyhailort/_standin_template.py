"""The stand-in's chat-template handling: what hailort v5.2.0 does with a list
of messages, in Python (jinja2) instead of minja. No part of HailoRT.

What it follows (hailo-ai/hailort v5.2.0):
- hailort/libhailort/src/genai/llm/minja_wrapper/minja_wrapper.cpp,
  PromptTemplateHandler: an empty template gives a handler that cannot render
  ("Prompt handler is not initialized"); otherwise the template is parsed as
  minja's chat_template(template, "", "") (bos_token and eos_token empty) and
  rendered once right away on [{"role": "TMP", "content": "TMP"}] with
  add_generation_prompt=false (line 18, lines 41-48); that text is kept as the
  "system prompt". The first prompt of a context renders its messages with
  add_generation_prompt=true; a later one renders the TMP message followed by
  its messages and drops the kept text from the front, refusing a system
  message ("System role messages can only be provided on the first prompt")
  and tools ("Tools can only be provided on the first prompt of the
  context"). Any exception there is a HailoRT error.
- hailort/libhailort/src/genai/llm/llm.cpp: LLM::create builds the handler
  (lines 254, 275), so a template that does not parse or whose TMP probe
  raises makes creation fail; clear_context() resets the handler to "first
  prompt" (line 375).
- minja (google/minja at the commit hailort pins, include/minja/chat-template.hpp):
  parse with trim_blocks and lstrip_blocks, no trailing newline kept; the
  context holds messages, add_generation_prompt, bos_token, eos_token,
  strftime_now and (when given) tools; raise_exception is a minja global. A
  template that renders a string content only in its typed form
  ([{"type": "text", "text": ...}], probed with a needle message) gets its
  string contents in that form.
"""
from __future__ import annotations

import json
import time

import jinja2
import jinja2.sandbox

TMP_MESSAGE = {"role": "TMP", "content": "TMP"}
NEEDLE = "<User Needle>"


class TemplateError(Exception):
    """What hailort reports as HAILO_INTERNAL_FAILURE / HAILO_INVALID_OPERATION."""


def _raise_exception(message):
    raise TemplateError(message)


class PromptTemplateHandler:
    def __init__(self, template):
        self.template = template or ""
        self._compiled = None
        self._first = True
        self._system_prompt = ""
        if not self.template:
            return
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                           extensions=["jinja2.ext.loopcontrols"])
        # minja's tojson writes JSON as it is (jinja2's own escapes <, > and & for HTML).
        env.filters["tojson"] = lambda value, indent=None: json.dumps(value, ensure_ascii=False, indent=indent)
        env.globals["raise_exception"] = _raise_exception
        env.globals["strftime_now"] = lambda fmt: time.strftime(fmt)
        try:
            self._compiled = env.from_string(self.template)
            self._typed = (not self._renders_needle(NEEDLE) and
                           self._renders_needle([{"type": "text", "text": NEEDLE}]))
            self._system_prompt = self._apply([TMP_MESSAGE], None, add_generation_prompt=False)
        except (jinja2.TemplateError, TemplateError) as e:
            raise TemplateError("Failed to create PromptTemplateHandler: %s" % e) from None

    def _renders_needle(self, content):
        try:
            return NEEDLE in self._compiled.render(messages=[{"role": "user", "content": content}],
                                                   add_generation_prompt=False, bos_token="", eos_token="")
        except Exception:
            return False

    def _apply(self, messages, tools, add_generation_prompt):
        if self._typed:
            messages = [dict(m, content=[{"type": "text", "text": m["content"]}])
                        if isinstance(m.get("content"), str) else m for m in messages]
        context = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                   "bos_token": "", "eos_token": ""}
        if tools:
            context["tools"] = tools
        return self._compiled.render(**context)

    def render(self, prompt_json_strings, tools_json_strings=()):
        if self._compiled is None:
            raise TemplateError("Prompt handler is not initialized. "
                                "This may happen if the prompt_template is not defined.")
        messages = [json.loads(s) for s in prompt_json_strings]
        tools = [json.loads(s) for s in tools_json_strings]
        try:
            if self._first:
                self._first = False
                return self._apply(messages, tools, add_generation_prompt=True)
            if tools:
                raise TemplateError("Tools can only be provided on the first prompt of the context")
            if any(m.get("role") == "system" for m in messages):
                raise TemplateError("System role messages can only be provided on the first prompt")
            return self._apply([TMP_MESSAGE] + messages, None, add_generation_prompt=True)[len(self._system_prompt):]
        except jinja2.TemplateError as e:
            raise TemplateError("Failed to render prompt from JSON strings: %s" % e) from None

    def reset_state(self):
        self._first = True
