"""A history → the Ollama ``/api/chat`` ``messages`` array.

The assistant message carries its ``thinking`` (the raw reasoning Ollama returned,
sent back so a thinking model keeps its train of thought across tool calls) and its
``tool_calls`` (arguments as an object, with the call's ``id`` when Ollama sent one);
each tool result is a ``{"role": "tool",
"tool_name"}`` message. Only thinking produced by the same endpoint and model goes
back. A message of one plain text part is sent as ``{"role", "content"}``, as one-turn
requests always were.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from thoughtline.model.parts import (
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    from_origin,
    plain_text,
)
from thoughtline.model.requests import Message
from thoughtline.providers._call_ids import is_synthetic_call_id
from thoughtline.providers._history import arguments_object, wire_items


def ollama_messages(
    messages: Sequence[Message], *, provider: str, model: str
) -> list[dict[str, Any]]:
    """The turns of the ``messages`` array (the system message is added by the caller)."""
    return wire_items(
        messages, ("ollama", provider, model), lambda m: _turns(m, provider=provider, model=model)
    )


def _turns(message: Message, *, provider: str, model: str) -> list[dict[str, Any]]:
    text = plain_text(message.parts)
    if text is not None:
        return [{"role": message.role, "content": text}]
    if message.role == "assistant":
        return [_assistant(message, provider=provider, model=model)]
    return _user(message)


def _assistant(message: Message, *, provider: str, model: str) -> dict[str, Any]:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        match part:
            case TextPart():
                texts.append(part.text)
            case ReasoningPart():
                if from_origin(part, provider=provider, model=model) and part.as_arrived:
                    thinking.append(part.as_arrived)
            case ToolCallPart():
                function: dict[str, Any] = {"name": part.name}
                index = part.provider_metadata.get("index")
                if isinstance(index, int):
                    function["index"] = index
                function["arguments"] = arguments_object(part)
                call: dict[str, Any] = {}
                if not is_synthetic_call_id(part.tool_call_id):
                    call["id"] = part.tool_call_id
                call["function"] = function
                calls.append(call)
            case ToolResultPart():
                pass  # results belong to user turns; an assistant turn has none to send
            case _:
                assert_never(part)
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if thinking:
        out["thinking"] = "".join(thinking)
    if calls:
        out["tool_calls"] = calls
    return out


def _user(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            out.append({"role": "tool", "content": part.content, "tool_name": part.name})
        elif isinstance(part, TextPart):
            out.append({"role": message.role, "content": part.text})
    return out
