"""Live run events across machines: PostgreSQL ``LISTEN/NOTIFY`` carrying ids only.

Every :meth:`~thoughtline.store.postgres.PostgresStore.append_run_events` transaction
notifies :data:`CHANNEL` with a line ``"<run_id> <first>-<last>"`` for each run it wrote:
the range of event numbers that commit added (a batch of deltas counts each of its
deltas). The lines of one commit share one notification (a daemon's writer commits the
live events of all its runs together: fifty runs are one notification, not fifty, for
the writer to send and for every listener to wake for), split only past
:data:`PAYLOAD_BYTES`.
The server delivers a notification to every listener when (and only if) the transaction
commits, so a listener that has every event up to ``first - 1`` finds exactly the new
ones with ``run_events(run_id, after_seq=first - 1)``, and one that already has ``last``
reads nothing. The events themselves stay in the table: a line is a run id and two
numbers, a payload at most :data:`PAYLOAD_BYTES`, far under NOTIFY's 8000-byte limit, and
a subscriber that resumes with ``Last-Event-ID`` reads the same rows.

:func:`parse_payload` also reads the earlier ``"<run_id> <last>"`` (a process one
version behind writing to the same database) and ignores any other line. (A process one
version behind ignores these payloads: its streams poll.)

A :class:`RunEventListener` holds one dedicated connection (outside the store's pool,
since a listening connection must stay open and idle).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import orjson
import psycopg

from thoughtline.store._postgres_connection import closed_error, conninfo, usage_errors
from thoughtline.store._postgres_dsn import server_location

CHANNEL = "thoughtline_run_events"
"""The notification channel every store announces appended run events on."""


@dataclass(frozen=True, slots=True)
class RunEventsAppended:
    """Events of ``run_id`` numbered ``first`` to ``seq`` were committed (``first``:
    ``None`` when the payload did not say)."""

    run_id: str
    seq: int
    first: int | None = None


PAYLOAD_BYTES = 2000
"""A payload names runs until it would exceed this (NOTIFY allows 8000 bytes)."""


def notification_payload(run_id: str, last: int, first: int | None = None) -> str:
    """The line of one run: ``"<run_id> <first>-<last>"``."""
    return f"{run_id} {last if first is None else first}-{last}"


def notification_payloads(rows: Iterable[tuple[Any, ...]]) -> list[str]:
    """The payloads of a transaction writing the run event rows ``rows`` (run id, seq,
    type, task id, at, data JSON): a line per run, in run id order, as few payloads as
    :data:`PAYLOAD_BYTES` allows (one, but for hundreds of runs in one commit)."""
    # Per run, the row of its lowest seq and its highest seq; as little work per row as
    # can be: this runs in the writer's thread for every event row written.
    lowest_rows: dict[str, tuple[Any, ...]] = {}
    highest: dict[str, int] = {}
    for row in rows:
        run_id, seq = row[0], row[1]
        known = lowest_rows.get(run_id)
        if known is None:
            lowest_rows[run_id] = row
            highest[run_id] = seq
        elif seq > highest[run_id]:
            highest[run_id] = seq
        elif seq < known[1]:
            lowest_rows[run_id] = row
    ranges = {run_id: (row[1], highest[run_id], row[-1]) for run_id, row in lowest_rows.items()}
    payloads: list[str] = []
    lines: list[str] = []
    size = 0
    for run_id, (lowest, last, data) in sorted(ranges.items()):
        line = notification_payload(run_id, last, lowest - _batched(data) + 1)
        if lines and size + 1 + len(line.encode()) > PAYLOAD_BYTES:
            payloads.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line.encode()) + 1
    if lines:
        payloads.append("\n".join(lines))
    return payloads


def _batched(data: object) -> int:
    """How many deltas an event row holds (a batch is ``{"texts": [...]}``, else one)."""
    if not isinstance(data, str) or not data.startswith('{"texts":'):
        return 1
    try:
        texts = orjson.loads(data).get("texts")
    except orjson.JSONDecodeError:  # a lone surrogate, kept as an escape orjson refuses
        texts = json.loads(data).get("texts")
    return len(texts) if isinstance(texts, list) and texts else 1


def parse_payload(payload: str) -> list[RunEventsAppended]:
    """The announcements a payload carries, one per line; a line this version does not
    read is left out."""
    found = (_parse_line(line) for line in payload.split("\n"))
    return [announced for announced in found if announced is not None]


def _parse_line(line: str) -> RunEventsAppended | None:
    run_id, _, numbers = line.rpartition(" ")
    if not run_id or " " in run_id:
        return None
    first, dash, last = numbers.partition("-")
    if not dash:
        return RunEventsAppended(run_id=run_id, seq=int(first)) if _number(first) else None
    if not (_number(first) and _number(last)) or int(first) > int(last):
        return None
    return RunEventsAppended(run_id=run_id, seq=int(last), first=int(first))


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 19


class RunEventListener:
    """Announcements of run events appended by any process on any machine sharing the
    PostgreSQL store at ``dsn``."""

    def __init__(self, dsn: str) -> None:
        self.location = server_location(dsn)
        with usage_errors(self.location):
            self._conn: psycopg.Connection[tuple[object, ...]] | None = psycopg.connect(
                conninfo(dsn), autocommit=True
            )
            self._conn.execute(f"LISTEN {CHANNEL}")

    def wait(self, timeout_s: float, *, limit: int | None = None) -> list[RunEventsAppended]:
        """The announcements that arrive within ``timeout_s`` (returns as soon as
        ``limit`` notifications have arrived), in commit order."""
        conn = self._conn
        if conn is None:
            raise closed_error(self.location)
        found: list[RunEventsAppended] = []
        with usage_errors(self.location):
            for notify in conn.notifies(timeout=timeout_s, stop_after=limit):
                found += parse_payload(notify.payload)
        return found

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> RunEventListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
