"""Chat Completions ``usage`` objects → :class:`~thoughtline.model.events.Usage`.

``prompt_tokens`` already includes cached prompt tokens (OpenAI's convention), so it is
the total input as is; ``prompt_tokens_details.cached_tokens`` (or DeepSeek's
``prompt_cache_hit_tokens``) is the cached share of it, and
``prompt_tokens_details.cache_write_tokens`` the share written to the cache. Groq puts the counts of a stream
in ``x_groq.usage`` on the last chunk instead of a top-level ``usage``.
"""

from __future__ import annotations

from typing import Any

from thoughtline.model.events import Usage


def int_or_none(value: Any) -> int | None:
    """An integer count, or None (booleans are not counts)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage_event(usage: dict[str, Any]) -> Usage | None:
    """``usage`` object → ``Usage`` (``None`` when it reports nothing)."""
    completion_details = usage.get("completion_tokens_details")
    prompt_details = usage.get("prompt_tokens_details")
    reasoning = (
        int_or_none(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else None
    )
    cached = (
        int_or_none(prompt_details.get("cached_tokens"))
        if isinstance(prompt_details, dict)
        else None
    )
    if cached is None:
        cached = int_or_none(usage.get("prompt_cache_hit_tokens"))  # DeepSeek's own field
    written = (
        int_or_none(prompt_details.get("cache_write_tokens"))
        if isinstance(prompt_details, dict)
        else None
    )
    event = Usage(
        input_tokens=int_or_none(usage.get("prompt_tokens")),
        output_tokens=int_or_none(usage.get("completion_tokens")),
        reasoning_tokens=reasoning,
        cached_input_tokens=cached,
        total_tokens=int_or_none(usage.get("total_tokens")),
        cache_write_tokens=written,
    )
    if event == Usage():
        return None
    return event


def chunk_usage(payload: dict[str, Any]) -> Usage | None:
    """The usage one chunk reports: top-level ``usage``, else Groq's ``x_groq.usage``."""
    usage = payload.get("usage")
    if isinstance(usage, dict):
        event = usage_event(usage)
        if event is not None:
            return event
    groq = payload.get("x_groq")
    if isinstance(groq, dict):
        groq_usage = groq.get("usage")
        if isinstance(groq_usage, dict):
            return usage_event(groq_usage)
    return None
