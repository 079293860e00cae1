"""Reasoning scrubbed out of raw Anthropic Messages bodies (``provider_raw`` layer)."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.providers.scrubbing import Payload, PayloadScrubber, blank_all_but, dicts

# Fields that only identify a reasoning object; every other field of it is blanked.
_KEEP: Final = frozenset({"type", "index"})


class AnthropicScrubber(PayloadScrubber):
    """``thinking``/``redacted_thinking`` blocks (in a message's ``content``,
    ``message_start`` or ``content_block_start``) and ``thinking_delta``/``signature_delta``."""

    def scrub(self, payload: Payload, slot: int) -> None:
        for block in dicts(payload.get("content")):  # a whole message body
            _anthropic_block(block)
        message = payload.get("message")
        if isinstance(message, dict):
            for block in dicts(message.get("content")):
                _anthropic_block(block)
        for key in ("content_block", "delta"):
            single = payload.get(key)
            if isinstance(single, dict):
                _anthropic_block(single)


def _anthropic_block(block: dict[str, Any]) -> None:
    kind = block.get("type")
    if isinstance(kind, str) and ("thinking" in kind or kind.startswith("signature")):
        blank_all_but(block, _KEEP)
