"""What every wire's provider-raw scrubber shares: the marker, the blanking rules, the
per-stream state of ``<think>`` tags, and the interface the runtime's scrubber
(:mod:`thoughtline.runtime.policy.scrub`) drives.

A wire's scrubber (``providers/<wire>/_scrub.py``, handed out by its unit's
``new_scrubber``) takes one decoded JSON payload — a stream frame's payload or a whole
response body, which every wire shapes alike — and blanks the reasoning in it, in place:
a non-empty string becomes :data:`REASONING_MARKER`, a non-empty array or object becomes
empty. Numbers, booleans and ``null`` carry no reasoning text and are left alone (so
``"thought": true`` and token counts survive), as is everything that is not reasoning.

Where a whole object is reasoning (an Anthropic thinking block, an OpenAI reasoning item,
a Gemini thought part), every field except the few that only identify it is blanked, so
a field a provider adds later is scrubbed too.

``<think>`` tags inside answer text need state across a stream; that is
:class:`InlineTags`, which runs the adapter's own splitter so the content left behind
is exactly the answer text the adapter decodes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, Final

from thoughtline.providers._think_tags import Segment, ThinkTagSplitter

REASONING_MARKER: Final = "[reasoning scrubbed]"
"""What every reasoning string is replaced by."""

Payload = dict[str, Any]
Patch = tuple[int, Payload]
"""``(slot, payload)``: a payload changed after its frame was written; re-serialize it."""

PART_KEEP: Final = frozenset({"type"})
"""The field that only identifies a reasoning part of an array (its ``type``)."""


def blank_value(container: dict[str, Any], key: str) -> None:
    """Blank ``container[key]`` if it can hold reasoning: strings, arrays, objects."""
    value = container.get(key)
    if isinstance(value, str):
        if value:
            container[key] = REASONING_MARKER
    elif isinstance(value, list):
        if value:
            container[key] = []
    elif isinstance(value, dict) and value:
        container[key] = {}


def blank_all_but(container: dict[str, Any], keep: frozenset[str]) -> None:
    """Blank every field of a reasoning object except the identifying ones in ``keep``."""
    for key in list(container):
        if key not in keep:
            blank_value(container, key)


def dicts(value: Any) -> Iterable[dict[str, Any]]:
    """The objects of a JSON array (anything else in it, or a non-array, yields nothing)."""
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                yield item


class PayloadScrubber(ABC):
    """Blanks reasoning in one wire's payloads. ``slot`` names where the payload was
    written, for scrubbers that must revise it once the stream has ended (:meth:`end`)."""

    @abstractmethod
    def scrub(self, payload: Payload, slot: int) -> None:
        """Blank the reasoning in ``payload``, in place."""

    def end(self) -> list[Patch]:
        """The stream (or body) ended: payloads to re-serialize because they changed."""
        return []


class _Carrier:
    """The last place a stream's ``content`` was written, for text released at the end."""

    __slots__ = ("message", "payload", "slot")

    def __init__(self, slot: int, payload: Payload, message: dict[str, Any]) -> None:
        self.slot = slot
        self.payload = payload
        self.message = message


def text_in(message: dict[str, Any], key: str) -> bool:
    """Whether ``message[key]`` is a non-empty string."""
    value = message.get(key)
    return isinstance(value, str) and bool(value)


class InlineTags:
    """``<think>`` blocks inline in answer text, split exactly as the adapter splits
    them (``new_splitter`` builds the adapter's splitter, or ``None``): one splitter per
    stream (a Chat Completions choice, an Ollama response), told when the server's
    reasoning field arrived, fed every string ``content`` in order and flushed at the
    stream's end. Each ``content`` is replaced by the answer text its
    delta released; text held back (a possible partial tag) is written where the
    splitter releases it, or, if that happens only at the end, appended to the stream's
    last content."""

    def __init__(self, new_splitter: Callable[[], ThinkTagSplitter | None]) -> None:
        self._new_splitter = new_splitter
        self._splitters: dict[object, ThinkTagSplitter | None] = {}
        self._carriers: dict[object, _Carrier] = {}

    def _splitter(self, key: object) -> ThinkTagSplitter | None:
        if key not in self._splitters:
            self._splitters[key] = self._new_splitter()
        return self._splitters[key]

    def reasoning_arrived(self, key: object) -> None:
        splitter = self._splitter(key)
        if splitter is not None:
            splitter.reasoning_arrived()

    def content(self, message: dict[str, Any], key: object, slot: int, payload: Payload) -> None:
        content = message.get("content")
        if not isinstance(content, str) or not content:
            return
        splitter = self._splitter(key)
        if splitter is None:
            return
        message["content"] = _answer(splitter.feed(content))
        self._carriers[key] = _Carrier(slot, payload, message)

    def finish(self, key: object, message: dict[str, Any], slot: int, payload: Payload) -> None:
        """The stream ``key`` ended in this payload: what was held goes into ``message``."""
        splitter = self._splitters.get(key)
        if splitter is None:
            return
        released = _answer(splitter.flush())
        if released:
            _append(message, released)
            self._carriers[key] = _Carrier(slot, payload, message)

    def end(self) -> list[Patch]:
        patches: list[Patch] = []
        for key, splitter in self._splitters.items():
            if splitter is None:
                continue
            released = _answer(splitter.flush())
            carrier = self._carriers.get(key)
            if released and carrier is not None:
                _append(carrier.message, released)
                patches.append((carrier.slot, carrier.payload))
        return patches


def _answer(segments: list[Segment]) -> str:
    return "".join(text for kind, text in segments if kind == "text")


def _append(message: dict[str, Any], text: str) -> None:
    content = message.get("content")
    message["content"] = (content if isinstance(content, str) else "") + text
