"""Text neither database takes, made storable: a lone surrogate (what a path or an
environment value that was not UTF-8 decodes to) is written escaped, every other
character as it is. A write that fails on one is written again through :func:`storable`
rather than losing every row with it."""

from __future__ import annotations

import re

from thoughtline.store.base import PreparedWrite

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF: Python's stand-in for a byte that was not UTF-8 (surrogateescape).
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def storable_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a byte that was not UTF-8 written ``\\xff``, any
    other lone surrogate ``\\udXXX``."""
    return _LONE_SURROGATE.sub(_escaped, text)


def _storable(value: object) -> object:
    return storable_text(value) if isinstance(value, str) else value


def _storable_row(row: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(_storable(value) for value in row)


def _storable_named(row: dict[str, object]) -> dict[str, object]:
    return {name: _storable(value) for name, value in row.items()}


def storable(write: PreparedWrite) -> PreparedWrite:
    """``write`` with every text made storable (:func:`storable_text`). Only used once a
    write was refused for such text: the rows are not scanned otherwise."""
    return PreparedWrite(
        created=[
            (_storable_row(run), [_storable_named(task) for task in tasks])
            for run, tasks in write.created
        ],
        events=[_storable_row(event) for event in write.events],
        runs=list(write.runs),
        tasks=[_storable_named(task) for task in write.tasks],
        trace=[_storable_row(event) for event in write.trace],
        tool_calls=[_storable_row(call) for call in write.tool_calls],
        threads=[_storable_row(thread) for thread in write.threads],
        step_costs=[_storable_row(cost) for cost in write.step_costs],
        run_ids=write.run_ids,
        replayed=write.replayed,
    )
