"""Responses ``usage`` and terminal status → :class:`Usage` and :class:`Finish`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.model.events import Finish, FinishReason, Usage

_INCOMPLETE_REASONS: Final[dict[str, FinishReason]] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


def usage_event(usage: object) -> Usage | None:
    """``None`` when the response reported no usage at all; absent fields stay ``None``."""
    if not isinstance(usage, Mapping):
        return None
    input_details = usage.get("input_tokens_details")
    output_details = usage.get("output_tokens_details")
    event = Usage(
        input_tokens=_count(usage.get("input_tokens")),
        output_tokens=_count(usage.get("output_tokens")),
        reasoning_tokens=_count(output_details.get("reasoning_tokens"))
        if isinstance(output_details, Mapping)
        else None,
        cached_input_tokens=_count(input_details.get("cached_tokens"))
        if isinstance(input_details, Mapping)
        else None,
        total_tokens=_count(usage.get("total_tokens")),
        # Part of input_tokens, as cached_tokens is.
        cache_write_tokens=_count(input_details.get("cache_write_tokens"))
        if isinstance(input_details, Mapping)
        else None,
    )
    if event == _EMPTY_USAGE:
        return None
    return event


_EMPTY_USAGE: Final = Usage()


def incomplete_finish(response: Mapping[str, Any]) -> Finish:
    """``response.incomplete``: the reason says whether the budget or a filter stopped it."""
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, Mapping) else None
    if not isinstance(reason, str) or not reason:
        return Finish(reason="other", raw_reason="incomplete")
    return Finish(reason=_INCOMPLETE_REASONS.get(reason, "other"), raw_reason=reason)


def _count(value: object) -> int | None:
    # bool is an int subclass; a count of True is not a count.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None
