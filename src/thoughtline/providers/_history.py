"""What every wire API's history conversion shares (each wire's own rules live in
``providers/<wire>/_history.py``)."""

from __future__ import annotations

from typing import Any

from thoughtline.parts import ToolCallPart
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
