"""What a ``hidden`` call asks the server for, where the server can be told not to reason.

Hidden mode drops whatever reasoning comes back (the disclosure gate), so nothing here
is needed for safety; it saves the server the work and keeps the reasoning off the
wire. Where a server has a switch, a hidden call sends it:

=========================  ====================================================
endpoint                   hidden mode sends
=========================  ====================================================
Ollama native              ``think: false``
raw-reasoning, toggle      ``chat_template_kwargs: {"enable_thinking": false}``
(vLLM, llama.cpp, …)
raw-reasoning, effort      ``thinking: {"type": "disabled"}`` (not with tools)
(DeepSeek)
OpenRouter                 ``reasoning: {"exclude": true}`` (the upstream may still
                           reason; it returns none; not with tools)
=========================  ====================================================

and nothing:

- to a model that does not reason (``thinking_control = "none"``) or that no request
  turns off (``always_reasons``: ``deepseek-reasoner``, gpt-oss on Ollama);
- to a raw-reasoning server or Ollama while an explicit effort is asked for (effort is a
  separate axis: the caller asked the model to reason that hard);
- when the call offers tools and the wire's tool loop needs the reasoning's carriers
  back: DeepSeek's thinking mode wants every tool-call turn's ``reasoning_content``
  back (thinking with tools is how it is meant to call them), and an upstream behind
  OpenRouter its ``reasoning_details`` (signatures, encrypted items), which ``exclude``
  withholds. The carriers stay in the loop's memory and the gate drops the text;
- on the other wire APIs, which return reasoning text only when asked
  (Anthropic, OpenAI, Gemini: hidden mode asks for none).

Each switch is its wire's (``hidden_ask`` of the ``openai_chat`` and ``ollama`` units);
the request builders (``openai_chat/_request.py``, ``ollama/_request.py``) add
:attr:`HiddenAsk.fields` to the body; ``thoughtline models`` shows :attr:`HiddenAsk.note`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint


@dataclass(frozen=True, slots=True, kw_only=True)
class HiddenAsk:
    """Body fields a hidden call adds (none: ``{}``) and one line saying what and why."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    note: str


def hidden_ask(
    endpoint: Endpoint, capability: ModelCapability, *, tools: bool, effort_sent: bool
) -> HiddenAsk:
    """What a hidden call to ``endpoint`` for a model of ``capability`` sends (module doc).

    ``tools``: the call offers tools; ``effort_sent``: an explicit effort was asked for.
    The wire API's unit says what its switch is, where it has one."""
    from thoughtline.providers.registry import wire_for

    if capability.thinking_control == "none":
        return HiddenAsk(note="nothing (the model does not reason)")
    ask = wire_for(endpoint.wire_api).hidden_ask(
        endpoint, capability, tools=tools, effort_sent=effort_sent
    )
    if ask is not None:
        return ask
    if capability.always_reasons:
        return HiddenAsk(note="nothing (no request turns its reasoning off)")
    return HiddenAsk(note="nothing (no reasoning text comes unasked)")
