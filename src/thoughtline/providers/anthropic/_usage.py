"""Anthropic ``usage`` in the common meaning of :class:`~thoughtline.model.events.Usage`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from thoughtline.model.events import Usage

NO_USAGE: Final = Usage()


def anthropic_usage(
    usage: Mapping[str, Any],
    *,
    output: bool,
    cache: tuple[int | None, int | None] = (None, None),
) -> Usage:
    """Anthropic ``usage`` (``message_start``, ``message_delta`` or a whole body) in the
    common meaning (see :class:`~thoughtline.model.events.Usage`).

    Anthropic's ``input_tokens`` counts only the input after the last cache breakpoint;
    cache reads and writes are separate. Total input is their sum, so it compares with
    OpenAI's ``prompt_tokens``. ``cache`` holds reads/writes reported earlier in the
    stream. ``output``: whether ``output_tokens`` is a real count (not in message_start).
    """
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    uncached = _int(usage.get("input_tokens"))
    total_input = None
    if uncached is not None:
        all_read = cache[0] if read is None else read
        all_write = cache[1] if write is None else write
        total_input = uncached + (all_read or 0) + (all_write or 0)
    if not output:
        return Usage(input_tokens=total_input, cached_input_tokens=read, cache_write_tokens=write)
    details = usage.get("output_tokens_details")
    thinking_tokens = details.get("thinking_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=total_input,
        output_tokens=_int(usage.get("output_tokens")),
        reasoning_tokens=_int(thinking_tokens),
        cached_input_tokens=read,
        cache_write_tokens=write,
    )


def _int(value: object) -> int | None:
    # bool is an int subclass; a boolean token count is not a count.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
