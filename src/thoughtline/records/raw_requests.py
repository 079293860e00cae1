"""The request bodies of the ``provider_raw`` trace layer, as stored and as read.

A tool loop sends its whole history again at every step, so storing each request whole
stores the loop's first turns once per step: bytes that grow with the square of its
steps. A task's first exchange keeps its ``request_body`` whole; each later one keeps
``request_delta`` instead: what changed since the body of an earlier exchange of the
same task (``after``, that event's id):

- ``lists``: for a top-level list (the turns: ``messages``, ``input``, ``contents``),
  how many of the earlier body's items it keeps and the items that follow them
  (``[kept, [items...]]``: the turns a step appended, or from the first item that
  changed);
- ``set``: every other top-level field whose value changed or is new;
- ``unset``: the top-level fields the body no longer has.

:func:`with_request_bodies` rebuilds each event's whole ``request_body`` on demand (the
trace view, ``--json``, the Python API, the daemon's trace route): the body as stored
before deltas were, equal after parsing to the body as sent (credentials redacted, and
the echoed reasoning scrubbed where the mode records none). A delta whose earlier event
is gone (retention removes the older events of a layer first) is read as stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import orjson

from thoughtline.records.domain import TraceEvent

DELTA_KEY = "request_delta"
EXCHANGE_TYPE = "provider.exchange"


def request_delta(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """What ``current`` changed of ``previous`` (both parsed request bodies, as sent)."""
    lists: dict[str, list[Any]] = {}
    changed: dict[str, Any] = {}
    for key, value in current.items():
        before = previous.get(key, _MISSING)
        if before is _MISSING:
            changed[key] = value
        elif isinstance(value, list) and isinstance(before, list):
            kept = _common_prefix(before, value)
            if kept < len(before) or kept < len(value):
                lists[key] = [kept, value[kept:]]
        elif value != before:
            changed[key] = value
    delta: dict[str, Any] = {"lists": lists, "set": changed}
    delta["unset"] = [key for key in previous if key not in current]
    return delta


def appended(
    previous_text: str, previous: dict[str, Any], text: str
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The body ``text`` holds and its :func:`request_delta` after ``previous`` (parsed
    from ``previous_text``), when ``text`` is ``previous_text`` with values appended to
    one top-level list and nothing else changed, as a loop's next request is: found by
    comparing the texts and parsing only the appended values, where parsing the whole
    body at every step made a long loop quadratic. ``None`` otherwise (the caller parses
    the whole body)."""
    if len(text) <= len(previous_text) + 1:
        return None
    keys = list(previous)
    for index, key in enumerate(keys):
        items = previous[key]
        if not isinstance(items, list) or not items:
            continue
        later = {name: previous[name] for name in keys[index + 1 :]}
        # What follows the list's "]" in both texts: the later fields, then "}".
        tail = "," + orjson.dumps(later).decode()[1:] if later else "}"
        end = len(previous_text) - len(tail) - 1  # where the list's "]" was
        stop = len(text) - len(tail) - 1  # where it is
        if (
            end <= 0
            or previous_text[end] != "]"
            or text[end] != ","
            or text[stop] != "]"
            or not previous_text.endswith(tail)
            or not text.endswith(tail)
            or not text.startswith(previous_text[:end])
        ):
            continue
        try:
            added = orjson.loads(f"[{text[end + 1 : stop]}]")
        except orjson.JSONDecodeError:
            return None
        # A valid array here is values in the list, the rest of the text unchanged.
        body = {**previous, key: [*items, *added]}
        return body, {"lists": {key: [len(items), added]}, "set": {}, "unset": []}
    return None


def apply_delta(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """The body ``delta`` (:func:`request_delta`) describes after ``base``."""
    body = dict(base)
    for key in delta.get("unset", ()):
        body.pop(key, None)
    for key, (kept, items) in delta.get("lists", {}).items():
        earlier = body.get(key)
        body[key] = [*(earlier[:kept] if isinstance(earlier, list) else ()), *items]
    body.update(delta.get("set", {}))
    return body


def with_request_bodies(events: Sequence[TraceEvent]) -> list[TraceEvent]:
    """``events`` with every stored delta read back as its whole ``request_body``
    (events in the order written, as the store returns them)."""
    bodies: dict[str, dict[str, Any]] = {}
    rebuilt: list[TraceEvent] = []
    for event in events:
        if event.type != EXCHANGE_TYPE:
            rebuilt.append(event)
            continue
        metadata = event.metadata
        delta = metadata.get(DELTA_KEY)
        if isinstance(delta, dict):
            base = bodies.get(str(delta.get("after")))
            if base is None:  # its earlier exchange expired, or is not among ``events``
                rebuilt.append(event)
                continue
            body = apply_delta(base, delta)
            bodies[event.id] = body
            whole = {key: value for key, value in metadata.items() if key != DELTA_KEY}
            whole["request_body"] = orjson.dumps(body).decode()
            rebuilt.append(replace(event, metadata=_in_order(metadata, whole)))
            continue
        sent = metadata.get("request_body")
        if isinstance(sent, str) and sent.startswith("{"):
            try:
                parsed = orjson.loads(sent)
            except orjson.JSONDecodeError:
                parsed = None
            if isinstance(parsed, dict):
                bodies[event.id] = parsed
        rebuilt.append(event)
    return rebuilt


def _in_order(stored: dict[str, Any], whole: dict[str, Any]) -> dict[str, Any]:
    """``whole`` with ``request_body`` where the stored delta was (the order it had when
    stored whole)."""
    return {
        ("request_body" if key == DELTA_KEY else key): whole[
            "request_body" if key == DELTA_KEY else key
        ]
        for key in stored
    }


def _common_prefix(before: list[Any], after: list[Any]) -> int:
    """How many leading items the two lists share."""
    count = min(len(before), len(after))
    for index in range(count):
        if before[index] != after[index]:
            return index
    return count


class _Missing:
    pass


_MISSING = _Missing()
