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


class EncodedItems(list[Any]):
    """A list of a request body's items (a history's wire form) with each item's JSON
    made once (``encoded``, the same order: what :func:`dumps_bytes` writes for each).
    A tool loop sends every earlier message again on every step; :func:`dumps_body`
    copies their kept JSON instead of encoding them again. The items are shared between
    requests and never changed."""

    __slots__ = ("encoded",)

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[orjson.Fragment] = []


def encoded_item(item: Any) -> orjson.Fragment:
    """``item``'s JSON as :func:`dumps_bytes` writes it, to be written again as is."""
    return orjson.Fragment(dumps_bytes(item))


def dumps_body(body: Mapping[str, Any]) -> bytes:
    """A request body as :func:`dumps_bytes` writes it (the same bytes), with each
    top-level :class:`EncodedItems` written from its items' kept JSON: a loop's body is
    then encoded in time with what each step adds, its history only copied."""
    return orjson.dumps(
        {
            key: value.encoded
            if type(value) is EncodedItems and len(value.encoded) == len(value)
            else value
            for key, value in body.items()
        },
        default=_fallback,
    )
