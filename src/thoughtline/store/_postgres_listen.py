"""Live run events across machines: PostgreSQL ``LISTEN/NOTIFY`` carrying ids only.

Every :meth:`~thoughtline.store.postgres.PostgresStore.append_run_events` transaction
notifies :data:`CHANNEL` with ``"<run_id> <seq>"`` for each run it wrote, ``seq`` being
the highest event number written. The server delivers a notification to every listener
when (and only if) the transaction commits, so a listener that then reads
``run_events(run_id, after_seq=<last it saw>)`` finds every event the notification
announces. The events themselves stay in the table: NOTIFY's 8000-byte payload limit
never matters, and a subscriber that resumes with ``Last-Event-ID`` reads the same rows.

A :class:`RunEventListener` holds one dedicated connection (outside the store's pool,
since a listening connection must stay open and idle).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

import psycopg

from thoughtline.store._postgres_connection import closed_error, conninfo, usage_errors
from thoughtline.store._postgres_dsn import server_location

CHANNEL = "thoughtline_run_events"
"""The notification channel every store announces appended run events on."""


@dataclass(frozen=True, slots=True)
class RunEventsAppended:
    """Events of ``run_id`` up to ``seq`` are in the store's run event log."""

    run_id: str
    seq: int


def notification_payload(run_id: str, seq: int) -> str:
    return f"{run_id} {seq}"


def parse_payload(payload: str) -> RunEventsAppended | None:
    """The announcement a payload carries, ``None`` for one this version does not read."""
    run_id, _, seq = payload.rpartition(" ")
    if not run_id or not seq.isdigit():
        return None
    return RunEventsAppended(run_id=run_id, seq=int(seq))


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
        ``limit`` have arrived), in commit order."""
        conn = self._conn
        if conn is None:
            raise closed_error(self.location)
        found: list[RunEventsAppended] = []
        with usage_errors(self.location):
            for notify in conn.notifies(timeout=timeout_s, stop_after=limit):
                announced = parse_payload(notify.payload)
                if announced is not None:
                    found.append(announced)
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
