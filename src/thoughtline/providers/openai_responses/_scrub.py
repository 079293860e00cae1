"""Reasoning scrubbed out of raw Responses bodies (``provider_raw`` layer)."""

from __future__ import annotations

from typing import Any, Final

from thoughtline.providers.scrubbing import (
    PART_KEEP,
    Payload,
    PayloadScrubber,
    blank_all_but,
    dicts,
)

# Fields that only identify a reasoning object; every other field of it is blanked.
_ITEM_KEEP: Final = frozenset({"type", "id", "status"})
_EVENT_KEEP: Final = frozenset(
    {"type", "sequence_number", "item_id", "output_index", "summary_index", "content_index"}
)


class ResponsesScrubber(PayloadScrubber):
    """Reasoning items wherever they appear (``item``, ``response.output``, a body's
    ``output``), every ``response.reasoning_*`` event and ``reasoning_text`` content parts."""

    def scrub(self, payload: Payload, slot: int) -> None:
        kind = payload.get("type")
        if isinstance(kind, str):
            if kind.startswith("response.reasoning"):
                blank_all_but(payload, _EVENT_KEEP)
            elif kind.startswith("response.content_part."):
                # A raw ``reasoning_text`` part of a reasoning item (gpt-oss style).
                part = payload.get("part")
                if isinstance(part, dict) and "reasoning" in str(part.get("type")):
                    blank_all_but(part, PART_KEEP)
        item = payload.get("item")
        if isinstance(item, dict):
            _responses_item(item)
        response = payload.get("response")
        if isinstance(response, dict):
            for item in dicts(response.get("output")):
                _responses_item(item)
        for item in dicts(payload.get("output")):  # a whole response body
            _responses_item(item)


def _responses_item(item: dict[str, Any]) -> None:
    if item.get("type") == "reasoning":
        blank_all_but(item, _ITEM_KEEP)
