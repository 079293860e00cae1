"""What every wire API's history conversion shares (each wire's own rules live in
``providers/<wire>/_history.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from thoughtline.model.events import StreamWarning
from thoughtline.model.parts import Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message
from thoughtline.wire.jsonio import EncodedItems, MalformedJSON, encoded_item, loads_object


def arguments_object(call: ToolCallPart) -> dict[str, Any]:
    """A call's arguments as the JSON object wire APIs take back (Anthropic ``input``,
    Gemini ``args``, Ollama ``arguments``). Arguments that are not a JSON object (cut by
    a broken stream) go back as ``{}``: such a call is never run, and every provider
    refuses anything but an object there."""
    if not call.arguments:
        return {}
    try:
        return loads_object(call.arguments)
    except MalformedJSON:
        return {}


def wire_items(
    messages: Sequence[Message],
    key: tuple[str, ...],
    build: Callable[[Message], list[dict[str, Any]]],
) -> list[dict[str, Any]]:
    """Every message of a history as a wire API sends it (``key``: the wire, endpoint,
    model and whatever else its form depends on), each message's items built once and
    kept on the message. A message is frozen and its conversion a pure function of it
    and ``key``, so a tool loop converts only its new turns on each step (converting the
    whole history each time made a long loop quadratic) and sends every earlier one with
    the same bytes. Each item's JSON is made once too (:class:`EncodedItems`), so the
    request body is encoded in time with what a step adds (:func:`dumps_body`). The items
    are shared between requests: never change them."""
    out = EncodedItems()
    encoded = out.encoded
    for message in messages:
        forms = message.wire_forms
        found = forms.get(key)
        if found is None:
            items = build(message)
            found = forms[key] = (items, [encoded_item(item) for item in items])
        out += found[0]
        encoded += found[1]
    return out


def after_leading(
    leading: list[dict[str, Any]], items: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``leading`` (a system message) then ``items`` (a history's wire form from
    :func:`wire_items`), the history's kept JSON carried along, so the body copies it
    (:func:`~thoughtline.wire.jsonio.dumps_body`) as it does where the history is a body
    value of its own."""
    out = EncodedItems()
    out += leading
    out += items
    if isinstance(items, EncodedItems) and len(items.encoded) == len(items):
        out.encoded += [encoded_item(item) for item in leading]
        out.encoded += items.encoded
    return out


def tool_turns_as_text(messages: Sequence[Message]) -> list[Message] | None:
    """``messages`` with each tool call and result written as text, for a wire API that
    refuses tool blocks in a request offering no tools (``None``: there are none). A
    message that held a call loses its reasoning: a carrier is bound to the blocks it
    came with, and those are no longer sent."""
    if not any(
        isinstance(part, ToolCallPart | ToolResultPart)
        for message in messages
        for part in message.parts
    ):
        return None
    out: list[Message] = []
    for message in messages:
        if not any(isinstance(part, ToolCallPart | ToolResultPart) for part in message.parts):
            out.append(message)
            continue
        parts: list[Part] = [
            TextPart(text=text)
            for part in message.parts
            if not isinstance(part, ReasoningPart) and (text := _as_text(part))
        ]
        out.append(Message(role=message.role, parts=parts))
    return out


def _as_text(part: Part) -> str:
    match part:
        case TextPart():
            return part.text
        case ToolCallPart():
            return f"[called {part.name} {part.arguments or '{}'}]"
        case ToolResultPart():
            verb = "failed" if part.is_error else "returned"
            return f"[{part.name} {verb}: {part.content}]"
        case _:
            return ""


def tool_turns_sent_as_text(api: str) -> StreamWarning:
    """What a task's notice says when :func:`tool_turns_as_text` was applied for ``api``."""
    return StreamWarning(
        code="TOOL_TURNS_AS_TEXT",
        message=f"The earlier tool calls and results went as text: {api} refuses them in "
        "a request that offers no tools.",
    )
