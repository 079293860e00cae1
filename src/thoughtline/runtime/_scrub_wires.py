"""Per-wire reasoning scrubbers for :mod:`thoughtline.runtime.scrub`.

Each scrubber takes one decoded JSON payload — a stream frame's payload or a whole
response body, which every wire shapes alike — and blanks the reasoning in it, in place:
a non-empty string becomes :data:`REASONING_MARKER`, a non-empty array or object becomes
empty. Numbers, booleans and ``null`` carry no reasoning text and are left alone (so
``"thought": true`` and token counts survive), as is everything that is not reasoning.

Where a whole object is reasoning (an Anthropic thinking block, an OpenAI reasoning item,
a Gemini thought part), every field except the few that only identify it is blanked, so
a field a provider adds later is scrubbed too.

``<think>`` tags inside Chat Completions or Ollama ``content`` need state across a stream;
that is :class:`_InlineTags`, which runs the adapter's own splitter (``content_splitter``)
so the content left behind is exactly the answer text the adapter decodes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Final

from thoughtline.providers._think_tags import Segment, ThinkTagSplitter, content_splitter
from thoughtline.providers.endpoints import Endpoint

REASONING_MARKER: Final = "[reasoning scrubbed]"
"""What every reasoning string is replaced by."""

Payload = dict[str, Any]
Patch = tuple[int, Payload]
"""``(slot, payload)``: a payload changed after its frame was written; re-serialize it."""

# Fields that only identify a reasoning object; every other field of it is blanked.
_ANTHROPIC_KEEP: Final = frozenset({"type", "index"})
_RESPONSES_ITEM_KEEP: Final = frozenset({"type", "id", "status"})
_RESPONSES_EVENT_KEEP: Final = frozenset(
    {"type", "sequence_number", "item_id", "output_index", "summary_index", "content_index"}
)
_PART_KEEP: Final = frozenset({"type"})
_GEMINI_THOUGHT_KEEP: Final = frozenset({"thought"})
_CHAT_REASONING_KEYS: Final = ("reasoning", "reasoning_content", "reasoning_details")
_GEMINI_SIGNATURE_KEYS: Final = ("thoughtSignature", "thought_signature")


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


def _dicts(value: Any) -> Iterable[dict[str, Any]]:
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


class AnthropicScrubber(PayloadScrubber):
    """``thinking``/``redacted_thinking`` blocks (in a message's ``content``,
    ``message_start`` or ``content_block_start``) and ``thinking_delta``/``signature_delta``."""

    def scrub(self, payload: Payload, slot: int) -> None:
        for block in _dicts(payload.get("content")):  # a whole message body
            _anthropic_block(block)
        message = payload.get("message")
        if isinstance(message, dict):
            for block in _dicts(message.get("content")):
                _anthropic_block(block)
        for key in ("content_block", "delta"):
            single = payload.get(key)
            if isinstance(single, dict):
                _anthropic_block(single)


def _anthropic_block(block: dict[str, Any]) -> None:
    kind = block.get("type")
    if isinstance(kind, str) and ("thinking" in kind or kind.startswith("signature")):
        blank_all_but(block, _ANTHROPIC_KEEP)


class ResponsesScrubber(PayloadScrubber):
    """Reasoning items wherever they appear (``item``, ``response.output``, a body's
    ``output``), every ``response.reasoning_*`` event and ``reasoning_text`` content parts."""

    def scrub(self, payload: Payload, slot: int) -> None:
        kind = payload.get("type")
        if isinstance(kind, str):
            if kind.startswith("response.reasoning"):
                blank_all_but(payload, _RESPONSES_EVENT_KEEP)
            elif kind.startswith("response.content_part."):
                # A raw ``reasoning_text`` part of a reasoning item (gpt-oss style).
                part = payload.get("part")
                if isinstance(part, dict) and "reasoning" in str(part.get("type")):
                    blank_all_but(part, _PART_KEEP)
        item = payload.get("item")
        if isinstance(item, dict):
            _responses_item(item)
        response = payload.get("response")
        if isinstance(response, dict):
            for item in _dicts(response.get("output")):
                _responses_item(item)
        for item in _dicts(payload.get("output")):  # a whole response body
            _responses_item(item)


def _responses_item(item: dict[str, Any]) -> None:
    if item.get("type") == "reasoning":
        blank_all_but(item, _RESPONSES_ITEM_KEEP)


class GeminiScrubber(PayloadScrubber):
    """Thought parts (``"thought": true``) and every ``thoughtSignature`` on any part."""

    def scrub(self, payload: Payload, slot: int) -> None:
        for candidate in _dicts(payload.get("candidates")):
            content = candidate.get("content")
            if not isinstance(content, dict):
                continue
            for part in _dicts(content.get("parts")):
                if part.get("thought") is True:
                    blank_all_but(part, _GEMINI_THOUGHT_KEEP)
                for key in _GEMINI_SIGNATURE_KEYS:
                    blank_value(part, key)


class _Carrier:
    """The last place a stream's ``content`` was written, for text released at the end."""

    __slots__ = ("message", "payload", "slot")

    def __init__(self, slot: int, payload: Payload, message: dict[str, Any]) -> None:
        self.slot = slot
        self.payload = payload
        self.message = message


def _text_in(message: dict[str, Any], key: str) -> bool:
    value = message.get(key)
    return isinstance(value, str) and bool(value)


def _chat_reasoning_arrived(message: dict[str, Any], dialect: str | None) -> bool:
    """Whether the adapter reads reasoning from this ``delta``/``message`` (the same test
    as ``openai_chat/_stream.py``, so both settle a response's ``<think>`` alike)."""
    if dialect == "openrouter":
        return bool(message.get("reasoning_details")) or _text_in(message, "reasoning")
    plain = message.get("reasoning_content") or message.get("reasoning")
    return isinstance(plain, str) and bool(plain)


class _InlineTags:
    """``<think>`` blocks inline in answer text, split exactly as the adapter splits
    them: one splitter per stream (a Chat Completions choice, an Ollama response), told
    when the server's reasoning field arrived, fed every string ``content`` in order and
    flushed at the stream's end. Each ``content`` is replaced by the answer text its
    delta released; text held back (a possible partial tag) is written where the
    splitter releases it, or, if that happens only at the end, appended to the stream's
    last content."""

    def __init__(self, endpoint: Endpoint, wire_api: str) -> None:
        self._endpoint = endpoint
        self._wire_api = wire_api
        self._splitters: dict[object, ThinkTagSplitter | None] = {}
        self._carriers: dict[object, _Carrier] = {}

    def _splitter(self, key: object) -> ThinkTagSplitter | None:
        if key not in self._splitters:
            endpoint = self._endpoint
            self._splitters[key] = content_splitter(
                self._wire_api, endpoint.dialect, endpoint.reasoning_field
            )
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


class OllamaScrubber(PayloadScrubber):
    """``message.thinking`` (``/api/chat``) and a top-level ``thinking`` (``/api/generate``);
    and a ``<think>`` block leading ``message.content`` (:class:`_InlineTags`)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._tags = _InlineTags(endpoint, "ollama")

    def scrub(self, payload: Payload, slot: int) -> None:
        message = payload.get("message")
        if isinstance(message, dict):
            if _text_in(message, "thinking"):
                self._tags.reasoning_arrived(0)
            blank_value(message, "thinking")
            self._tags.content(message, 0, slot, payload)
            if payload.get("done") is True:
                self._tags.finish(0, message, slot, payload)
        blank_value(payload, "thinking")

    def end(self) -> list[Patch]:
        return self._tags.end()


class ChatScrubber(PayloadScrubber):
    """``reasoning``, ``reasoning_content`` and ``reasoning_details`` on every choice's
    ``delta``/``message``; thinking items of an array ``content``; and ``<think>`` blocks
    inline in ``content`` where the adapter splits them (:class:`_InlineTags`, one
    stream per choice, flushed at its ``finish_reason``)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._dialect = endpoint.dialect
        self._tags = _InlineTags(endpoint, "openai-chat")

    def scrub(self, payload: Payload, slot: int) -> None:
        for position, choice in enumerate(_dicts(payload.get("choices"))):
            index = choice.get("index", position)
            key: object = index if isinstance(index, int | str) else position
            for field in ("delta", "message"):
                message = choice.get(field)
                if isinstance(message, dict):
                    self._message(message, key, slot, payload)
            if choice.get("finish_reason"):
                message = choice.get("delta", choice.get("message"))
                if not isinstance(message, dict):
                    message = {}
                self._tags.finish(key, message, slot, payload)
                if message and not isinstance(choice.get("delta", choice.get("message")), dict):
                    choice["delta"] = message

    def _message(self, message: dict[str, Any], key: object, slot: int, payload: Payload) -> None:
        if _chat_reasoning_arrived(message, self._dialect):
            self._tags.reasoning_arrived(key)
        for name in _CHAT_REASONING_KEYS:
            blank_value(message, name)
        content = message.get("content")
        if isinstance(content, list):
            for item in _dicts(content):
                if item.get("type") in ("thinking", "reasoning"):
                    blank_all_but(item, _PART_KEEP)
        else:
            self._tags.content(message, key, slot, payload)

    def end(self) -> list[Patch]:
        return self._tags.end()


def scrubber_for(wire_api: str, endpoint: Endpoint) -> PayloadScrubber | None:
    """A fresh scrubber for one body of ``wire_api``; ``None`` for an unknown wire API."""
    if wire_api == "anthropic-messages":
        return AnthropicScrubber()
    if wire_api == "openai-responses":
        return ResponsesScrubber()
    if wire_api == "openai-chat":
        return ChatScrubber(endpoint)
    if wire_api == "gemini":
        return GeminiScrubber()
    if wire_api == "ollama":
        return OllamaScrubber(endpoint)
    return None
