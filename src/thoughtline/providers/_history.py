"""What every wire API's history conversion shares (each wire's own rules live in
``providers/<wire>/_history.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from thoughtline.parts import ToolCallPart
from thoughtline.requests import Message
from thoughtline.wire.jsonio import MalformedJSON, loads_object


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
    the same bytes. The items are shared between requests: never change them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        forms = message.wire_forms
        found = forms.get(key)
        if found is None:
            found = forms[key] = build(message)
        out += found
    return out
