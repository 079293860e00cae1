"""Scrub echoed reasoning out of raw request bodies for the ``provider_raw`` trace layer.

From a task's second model call on, the request carries the reasoning of earlier calls
back to the provider (signatures, encrypted carriers, and on some wires the reasoning
text itself): each wire's round-trip rule demands it. Unless the mode records reasoning,
the body written to the trace keeps everything else — the prompt, the answer text of
earlier turns, the tool calls and results, the settings — and has every echoed reasoning
value replaced by :data:`~thoughtline.runtime.scrub.REASONING_MARKER`.

What counts as echoed reasoning, in the turns (``messages``, ``input``, ``contents``) of
any wire: Anthropic ``thinking`` / ``redacted_thinking`` blocks, Responses ``reasoning``
items, Gemini ``thought`` parts and every ``thoughtSignature``, and the reasoning fields
of Chat Completions and Ollama messages. A body that is not JSON is replaced whole.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from thoughtline.providers.scrubbing import REASONING_MARKER
from thoughtline.runtime.scrub import UNPARSEABLE_MARKER

_TURNS: Final = ("messages", "input", "contents")
_REASONING_BLOCKS: Final = frozenset({"thinking", "redacted_thinking", "reasoning"})
_REASONING_FIELDS: Final = frozenset(
    {
        "reasoning_content",
        "reasoning",
        "reasoning_details",
        "thinking",
        "thoughtSignature",
        "thought_signature",
        "encrypted_content",
        "signature",
    }
)


def scrub_request(body: str) -> str:
    """``body`` (a request as sent) with the reasoning it echoes replaced."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return UNPARSEABLE_MARKER
    if not isinstance(payload, dict):
        return body
    for key in _TURNS:
        if key in payload:
            payload[key] = _scrub(payload[key])
    return orjson.dumps(payload).decode()


def _scrub(value: Any) -> Any:
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if not isinstance(value, dict):
        return value
    if value.get("type") in _REASONING_BLOCKS or value.get("thought") is True:
        # The whole block is reasoning: only its kind stays, to show where it was.
        kept = {key: value[key] for key in ("type", "thought", "id") if key in value}
        return {**kept, "scrubbed": REASONING_MARKER}
    return {
        key: REASONING_MARKER if key in _REASONING_FIELDS else _scrub(item)
        for key, item in value.items()
    }
