"""A history → the OpenAI Responses ``input`` array.

Round-trip rules (``store: false``, so nothing is kept server-side):

- An assistant turn's reasoning goes back as a ``reasoning`` item (its ``id``, the
  ``summary`` texts, raw ``content`` where a server sent some, and the
  ``encrypted_content`` carrier byte for byte) right before the items that followed it
  (``function_call``, message). The parts of one reasoning item arrive as several
  reasoning parts sharing an ``item_id``; they are joined back into one item.
- A reasoning item with neither ``encrypted_content`` nor raw ``content`` cannot be
  sent: with ``store: false`` the API could only look it up by id and fails ("Item with
  id 'rs_…' not found"). In hidden mode no carrier is asked for, so none goes back. An
  item with raw ``content`` came from a server that returns its raw reasoning (gpt-oss
  behind vLLM, DeepSeek's ``/responses``; OpenAI's API returns summaries only) and goes
  back with it, before the call it led to, as such a server takes it.
- Only reasoning produced by the same endpoint and model goes back.
- Tool calls are ``function_call`` items; tool results ``function_call_output`` items.
  Assistant text keeps its ``phase`` (a ``commentary`` preamble stays one).
- A message of one plain text part is sent as ``{"role", "content"}`` with a string,
  as one-turn requests always were.
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
from thoughtline.providers._history import wire_items


def responses_input(
    messages: Sequence[Message], *, provider: str, model: str
) -> list[dict[str, Any]]:
    """The ``input`` array for a request to ``model`` on endpoint ``provider``."""
    return wire_items(
        messages,
        ("openai-responses", provider, model),
        lambda m: _items(m, provider=provider, model=model),
    )


def _items(message: Message, *, provider: str, model: str) -> list[dict[str, Any]]:
    """One message's items (no item joins parts of two messages)."""
    text = plain_text(message.parts)
    if text is not None:
        return [{"role": message.role, "content": text}]
    items: list[dict[str, Any]] = []
    _add_parts(message, items, provider=provider, model=model)
    # Dropped last, so the parts of one item are joined first whatever their kinds.
    return [item for item in items if item.get("type") != "reasoning" or _carried(item)]


def _add_parts(message: Message, items: list[dict[str, Any]], *, provider: str, model: str) -> None:
    reasoning: dict[str, Any] | None = None  # the reasoning item being joined
    text_item: dict[str, Any] | None = None  # the message item being joined
    text_id: object = None
    for part in message.parts:
        match part:
            case TextPart():
                text_item, text_id = _add_text(message, part, items, text_item, text_id)
                reasoning = None
                continue
            case ReasoningPart():
                if from_origin(part, provider=provider, model=model):
                    reasoning = _add_reasoning(part, items, reasoning)
            case ToolCallPart():
                items.append(
                    {
                        "type": "function_call",
                        "call_id": part.tool_call_id,
                        "name": part.name,
                        "arguments": part.arguments,
                    }
                )
                reasoning = None
            case ToolResultPart():
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": part.tool_call_id,
                        "output": part.content,
                    }
                )
                reasoning = None
            case _:
                assert_never(part)
        text_item = None


def _add_text(
    message: Message,
    part: TextPart,
    items: list[dict[str, Any]],
    current: dict[str, Any] | None,
    current_id: object,
) -> tuple[dict[str, Any] | None, object]:
    """Join text parts of one output message (its content parts) back into one item."""
    item_id = part.provider_metadata.get("item_id")
    if current is not None and item_id is not None and item_id == current_id:
        current["content"] += part.text
        return current, current_id
    if not part.text:
        return None, None
    item: dict[str, Any] = {"role": message.role, "content": part.text}
    phase = part.provider_metadata.get("phase")
    if message.role == "assistant" and isinstance(phase, str):
        item["phase"] = phase
    items.append(item)
    return item, item_id


def _add_reasoning(
    part: ReasoningPart, items: list[dict[str, Any]], current: dict[str, Any] | None
) -> dict[str, Any]:
    metadata = part.provider_metadata
    item_id = metadata.get("item_id")
    if current is None or current["id"] != item_id:
        current = {"type": "reasoning", "id": item_id, "summary": []}
        items.append(current)
    if part.kind == "summary":
        current["summary"].append({"type": "summary_text", "text": part.as_arrived})
    elif part.kind == "raw":
        current.setdefault("content", []).append(
            {"type": "reasoning_text", "text": part.as_arrived}
        )
    encrypted = metadata.get("encrypted_content")
    if isinstance(encrypted, str):
        current["encrypted_content"] = encrypted
    return current


def _carried(item: dict[str, Any]) -> bool:
    """Whether a reasoning item can go back: it has an id and carries itself (the
    encrypted carrier, or the raw reasoning a raw-reasoning server sent)."""
    return isinstance(item.get("id"), str) and (
        "encrypted_content" in item or bool(item.get("content"))
    )
