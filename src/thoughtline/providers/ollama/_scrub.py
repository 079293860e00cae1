"""Reasoning scrubbed out of raw Ollama ``/api/chat`` bodies (``provider_raw`` layer)."""

from __future__ import annotations

from thoughtline.providers._think_tags import content_splitter
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.scrubbing import (
    InlineTags,
    Patch,
    Payload,
    PayloadScrubber,
    blank_value,
    text_in,
)


class OllamaScrubber(PayloadScrubber):
    """``message.thinking`` (``/api/chat``) and a top-level ``thinking`` (``/api/generate``);
    and a ``<think>`` block leading ``message.content``
    (:class:`~thoughtline.providers.scrubbing.InlineTags`)."""

    def __init__(self, endpoint: Endpoint) -> None:
        field = endpoint.reasoning_field
        self._tags = InlineTags(lambda: content_splitter(field, think_tags=False))

    def scrub(self, payload: Payload, slot: int) -> None:
        message = payload.get("message")
        if isinstance(message, dict):
            if text_in(message, "thinking"):
                self._tags.reasoning_arrived(0)
            blank_value(message, "thinking")
            self._tags.content(message, 0, slot, payload)
            if payload.get("done") is True:
                self._tags.finish(0, message, slot, payload)
        blank_value(payload, "thinking")

    def end(self) -> list[Patch]:
        return self._tags.end()
