"""JSON in and out of the wire, in one place so the parser can be swapped for speed."""

from __future__ import annotations

import json
from typing import Any


class MalformedJSON(ValueError):
    """A frame's payload is not the JSON object the protocol promises."""


_decode = json.JSONDecoder().decode
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def loads_object(text: str | bytes) -> dict[str, Any]:
    """Parse one JSON object; anything else (invalid JSON, a list, a string) is malformed."""
    try:
        value = _decode(text if isinstance(text, str) else text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        preview = text[:120] if isinstance(text, str) else text[:120].decode("utf-8", "replace")
        raise MalformedJSON(
            f"not valid JSON: {exc.args[0] if exc.args else exc}; got {preview!r}"
        ) from exc
    if not isinstance(value, dict):
        raise MalformedJSON(f"expected a JSON object, got {type(value).__name__}")
    return value


def dumps(value: Any) -> str:
    """Compact JSON, UTF-8 kept as is."""
    return _encode(value)
