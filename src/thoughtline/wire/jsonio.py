"""JSON in and out of the wire, in one place. Parsing uses orjson: on the streaming hot
path every frame is one JSON document, and orjson parses them several times faster than
the standard library."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson


class MalformedJSON(ValueError):
    """A frame's payload is not the JSON object the protocol promises."""


_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def loads_object(text: str | bytes) -> dict[str, Any]:
    """Parse one JSON object; anything else (invalid JSON, a list, a string) is malformed."""
    try:
        value = _loads(text)
    except _JSONDecodeError as exc:
        preview = text[:120] if isinstance(text, str) else text[:120].decode("utf-8", "replace")
        raise MalformedJSON(f"not valid JSON ({exc}); got {preview!r}") from exc
    if type(value) is not dict:
        raise MalformedJSON(f"expected a JSON object, got {type(value).__name__}")
    return value


def _fallback(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def dumps(value: Any) -> str:
    """Compact JSON, UTF-8 kept as is."""
    return orjson.dumps(value, default=_fallback).decode("utf-8")


def dumps_bytes(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes (request bodies)."""
    return orjson.dumps(value, default=_fallback)
