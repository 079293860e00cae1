"""The simulator's JSON: compact, UTF-8 as is, and any string a test gives it written,
a lone UTF-16 surrogate escaped (``\\ud83d``) as a server building its strings in UTF-16
writes one (JavaScript's ``JSON.stringify``), and read back: orjson refuses those."""

from __future__ import annotations

import json
from typing import Any

from thoughtline.wire.jsonio import MalformedJSON, loads_object
from thoughtline.wire.jsonio import dumps as _dumps


def dumps(value: Any) -> str:
    try:
        return _dumps(value)
    except TypeError:
        # orjson takes no lone surrogate; the standard library escapes it.
        return json.dumps(value, separators=(",", ":"))


def loads_any(body: str | bytes) -> dict[str, Any]:
    """A body the simulator wrote, read back (lone surrogates included)."""
    try:
        return loads_object(body)
    except MalformedJSON:
        value: dict[str, Any] = json.loads(body)
        return value
