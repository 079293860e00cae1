"""Reasoning scrubbed out of raw Gemini bodies (``provider_raw`` layer)."""

from __future__ import annotations

from typing import Final

from thoughtline.providers.scrubbing import (
    Payload,
    PayloadScrubber,
    blank_all_but,
    blank_value,
    dicts,
)

_THOUGHT_KEEP: Final = frozenset({"thought"})
_SIGNATURE_KEYS: Final = ("thoughtSignature", "thought_signature")


class GeminiScrubber(PayloadScrubber):
    """Thought parts (``"thought": true``) and every ``thoughtSignature`` on any part."""

    def scrub(self, payload: Payload, slot: int) -> None:
        for candidate in dicts(payload.get("candidates")):
            content = candidate.get("content")
            if not isinstance(content, dict):
                continue
            for part in dicts(content.get("parts")):
                if part.get("thought") is True:
                    blank_all_but(part, _THOUGHT_KEEP)
                for key in _SIGNATURE_KEYS:
                    blank_value(part, key)
