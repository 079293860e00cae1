"""Stream frames whose JSON escapes a lone UTF-16 surrogate (``"\\ud83d"``), read once the
fast parser (orjson, which refuses them) has: a server that builds its strings in UTF-16
(JavaScript's) can cut a character outside the Basic Multilingual Plane, an emoji, between
two deltas, its high surrogate ending one frame's text and its low one starting the next.

:class:`SurrogateJoiner` parses such a frame with the standard library (which takes them),
holds a high surrogate that ends a string and puts it before the same field's text in the
next frame it reads, so the pair becomes its one character again, and turns a surrogate
left without its pair into U+FFFD, as a UTF-8 decoder's replacement does: what goes on
is valid Unicode, as the store and every client need. Only frames the fast parser refused
come here, so a stream without them pays nothing; a frame the standard library cannot
read either, or that holds no surrogate, stays malformed."""

from __future__ import annotations

import json
import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
Path = tuple[str | int, ...]


class SurrogateJoiner:
    """The lone surrogates of one stream's frames, joined across frames (one per
    stream: what it holds is that stream's)."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[Path, str] = {}
        """A high surrogate that ended the string at a path, for that path's next text."""

    def loads_object(self, text: str | bytes) -> dict[str, Any] | None:
        """The frame's object with its surrogates resolved; ``None`` when the standard
        library cannot read it as an object either, or it holds no surrogate (the fast
        parser's refusal then stands)."""
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if type(value) is not dict:
            return None
        found: list[bool] = []
        resolved = self._walk(value, (), found)
        return resolved if found else None

    def _walk(self, value: Any, path: Path, found: list[bool]) -> Any:
        if type(value) is str:
            return self._text(value, path, found)
        if type(value) is dict:
            return {key: self._walk(item, (*path, key), found) for key, item in value.items()}
        if type(value) is list:
            return [self._walk(item, (*path, index), found) for index, item in enumerate(value)]
        return value

    def _text(self, text: str, path: Path, found: list[bool]) -> str:
        held = self._held.pop(path, "")
        if not held and _SURROGATE.search(text) is None:
            return text
        found.append(True)
        text = held + text
        if text and "\ud800" <= text[-1] <= "\udbff":  # the pair's first half: held
            self._held[path] = text[-1]
            text = text[:-1]
        # Pairs become their character; a surrogate alone, U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
