"""Reasoning scrubbed out of raw Chat Completions bodies (``provider_raw`` layer)."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.openai_chat._stream import answer_splitter
from thoughtline.providers.scrubbing import (
    PART_KEEP,
    InlineTags,
    Patch,
    Payload,
    PayloadScrubber,
    blank_all_but,
    blank_value,
    dicts,
    text_in,
)

_REASONING_KEYS: Final = ("reasoning", "reasoning_content", "reasoning_details")


def _chat_reasoning_arrived(message: dict[str, Any], dialect: str | None) -> bool:
    """Whether the adapter reads reasoning from this ``delta``/``message`` (the same test
    as ``openai_chat/_stream.py``, so both settle a response's ``<think>`` alike)."""
    if dialect == "openrouter":
        return bool(message.get("reasoning_details")) or text_in(message, "reasoning")
    plain = message.get("reasoning_content") or message.get("reasoning")
    return isinstance(plain, str) and bool(plain)


class ChatScrubber(PayloadScrubber):
    """``reasoning``, ``reasoning_content`` and ``reasoning_details`` on every choice's
    ``delta``/``message``; thinking items of an array ``content``; and ``<think>`` blocks
    inline in ``content`` where the adapter splits them
    (:class:`~thoughtline.providers.scrubbing.InlineTags`, one stream per choice, flushed
    at its ``finish_reason``)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._dialect = endpoint.dialect
        field = endpoint.reasoning_field
        self._tags = InlineTags(lambda: answer_splitter(endpoint.dialect, field))

    def scrub(self, payload: Payload, slot: int) -> None:
        for position, choice in enumerate(dicts(payload.get("choices"))):
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
        for name in _REASONING_KEYS:
            blank_value(message, name)
        content = message.get("content")
        if isinstance(content, list):
            for item in dicts(content):
                if item.get("type") in ("thinking", "reasoning"):
                    blank_all_but(item, PART_KEEP)
        else:
            self._tags.content(message, key, slot, payload)

    def end(self) -> list[Patch]:
        return self._tags.end()
