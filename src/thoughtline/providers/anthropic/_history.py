"""A history → the Anthropic Messages ``messages`` array.

Round-trip rules (a broken one is a 400 from Anthropic):

- ``thinking`` and ``redacted_thinking`` blocks go back unmodified, signature and opaque
  ``data`` byte for byte, in the order they came, before the ``tool_use`` they led to.
  A block with empty text (``display: "omitted"``) goes back too: its signature is the
  carrier.
- Only blocks produced by the same endpoint and model go back; others are dropped
  (a signature is bound to its model). A thinking block without a signature (cut by a
  broken stream) cannot be replayed and is dropped.
- Tool calls are ``tool_use`` blocks; tool results are ``tool_result`` blocks in a user
  message, with ``is_error`` when the call failed.
- A message of one plain text part is sent as a string, so one-turn requests keep the
  body they always had. Conversion is a pure function of the history: every earlier
  message is sent with the same bytes on every step, which newer Claude models require
  (a thinking block is bound to everything before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, assert_never

from thoughtline.model.parts import (
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    from_origin,
    plain_text,
)
from thoughtline.model.requests import Message
from thoughtline.providers._history import arguments_object, wire_items


def anthropic_messages(
    messages: Sequence[Message], *, provider: str, model: str
) -> list[dict[str, Any]]:
    """The ``messages`` array for a request to ``model`` on endpoint ``provider``."""
    return wire_items(
        messages,
        ("anthropic", provider, model),
        lambda m: [_message(m, provider=provider, model=model)],
    )


def _message(message: Message, *, provider: str, model: str) -> dict[str, Any]:
    text = plain_text(message.parts)
    if text is not None:
        return {"role": message.role, "content": text}
    blocks = [
        block
        for part in message.parts
        if (block := _block(part, provider=provider, model=model)) is not None
    ]
    return {"role": message.role, "content": blocks}


def _block(part: Part, *, provider: str, model: str) -> dict[str, Any] | None:
    match part:
        case TextPart():
            # Anthropic refuses empty text blocks.
            return {"type": "text", "text": part.text} if part.text else None
        case ReasoningPart():
            if not from_origin(part, provider=provider, model=model):
                return None
            return _thinking(part)
        case ToolCallPart():
            return {
                "type": "tool_use",
                "id": part.tool_call_id,
                "name": part.name,
                "input": arguments_object(part),
            }
        case ToolResultPart():
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": part.tool_call_id,
                "content": part.content,
            }
            if part.is_error:
                block["is_error"] = True
            return block
        case _:
            assert_never(part)


def _thinking(part: ReasoningPart) -> dict[str, Any] | None:
    metadata = part.provider_metadata
    if part.kind == "redacted":
        data = metadata.get("data")
        return {"type": "redacted_thinking", "data": data} if isinstance(data, str) else None
    signature = metadata.get("signature")
    if not isinstance(signature, str):
        return None
    # The signature signs the text as it arrived (the gate may have withheld it).
    return {"type": "thinking", "thinking": part.as_arrived, "signature": signature}
