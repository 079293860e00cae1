"""A history → the Gemini ``contents`` array.

Round-trip rules:

- A ``thoughtSignature`` goes back exactly as it came, on the part it came on. A
  function call's signature stays on its ``functionCall`` part: Gemini 3 refuses a call
  without it ("Function call is missing a thought_signature"). With parallel calls only
  the first carries one, and only that one gets one back.
- A signature that came on a thought or text part is put back on that part; one that
  came on an empty part goes back as an empty text part carrying it.
- Thought summaries go back as ``{"text", "thought": true}`` parts.
- Only reasoning and signatures produced by the same endpoint and model go back: the
  calls themselves stay, without a foreign signature.
- Tool results are ``functionResponse`` parts (``{"output": ...}``, or ``{"error": ...}``
  for a failed call) in a user turn. Call ids go back only when Gemini sent them.
- A message of one plain text part is sent as ``{"role", "parts": [{"text"}]}``, as
  one-turn requests always were.
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


def gemini_contents(
    messages: Sequence[Message], *, provider: str, model: str
) -> list[dict[str, Any]]:
    """The ``contents`` array for a request to ``model`` on endpoint ``provider``."""
    return wire_items(
        messages,
        ("gemini", provider, model),
        lambda m: [_content(m, provider=provider, model=model)],
    )


def _content(message: Message, *, provider: str, model: str) -> dict[str, Any]:
    role = "model" if message.role == "assistant" else "user"
    text = plain_text(message.parts)
    if text is not None:
        return {"role": role, "parts": [{"text": text}]}
    return {"role": role, "parts": _parts(message, provider=provider, model=model)}


def _parts(message: Message, *, provider: str, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}  # the latest "thought" and "text" part sent
    for part in message.parts:
        match part:
            case TextPart():
                if part.text:
                    last["text"] = {"text": part.text}
                    parts.append(last["text"])
            case ReasoningPart():
                if from_origin(part, provider=provider, model=model):
                    _reasoning(part, parts, last)
            case ToolCallPart():
                parts.append(_function_call(part, provider=provider, model=model))
            case ToolResultPart():
                parts.append(_function_response(part))
            case _:
                assert_never(part)
    return parts


def _reasoning(
    part: ReasoningPart, parts: list[dict[str, Any]], last: dict[str, dict[str, Any]]
) -> None:
    signature = part.provider_metadata.get("thought_signature")
    if not isinstance(signature, str):
        if part.as_arrived:
            last["thought"] = {"text": part.as_arrived, "thought": True}
            parts.append(last["thought"])
        return
    attached = part.provider_metadata.get("attached_to")
    if attached == "function_call":
        return  # sent on the functionCall part itself
    target = last.get(attached) if isinstance(attached, str) else None
    if target is not None and "thoughtSignature" not in target:
        target["thoughtSignature"] = signature
    else:
        parts.append({"text": "", "thoughtSignature": signature})


def _function_call(part: ToolCallPart, *, provider: str, model: str) -> dict[str, Any]:
    call: dict[str, Any] = {"name": part.name, "args": arguments_object(part)}
    if not is_synthetic_call_id(part.tool_call_id):
        call["id"] = part.tool_call_id
    out: dict[str, Any] = {"functionCall": call}
    signature = part.provider_metadata.get("thought_signature")
    if isinstance(signature, str) and from_origin(part, provider=provider, model=model):
        out["thoughtSignature"] = signature
    return out


def _function_response(part: ToolResultPart) -> dict[str, Any]:
    response: dict[str, Any] = {"name": part.name}
    if not is_synthetic_call_id(part.tool_call_id):
        response["id"] = part.tool_call_id
    response["response"] = {"error" if part.is_error else "output": part.content}
    return {"functionResponse": response}
