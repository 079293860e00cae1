"""Holding a store writer's writes while its server is away (PostgreSQL restarted,
failed over, unreachable): in order, tried again with growing delays, bounded by
``outage_buffer_rows`` and ``outage_limit_s``, and reported to the runs that queued them
when given up (:class:`~thoughtline.runtime.engine.store_writer.StoreWriter`)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from thoughtline.store.base import PreparedWrite, StoreError

logger = logging.getLogger(__name__)

RETRY_FIRST_S: Final = 0.2
RETRY_MAX_S: Final = 2.0
"""While the server is away, tries again after 0.2 s, doubling up to 2 s."""

FailureCallback = Callable[[StoreError], None]


@dataclass(slots=True, eq=False)
class QueuedWrite:
    """One queued write and who to tell how it went."""

    seq: int
    write: PreparedWrite
    on_failure: FailureCallback | None
    held: bool
    """May be held through an outage (a run's creation may not: refused at once)."""
    done: asyncio.Future[None] | None = None
    rows: int = 0


Failures = list[tuple[QueuedWrite, StoreError]]


@dataclass(slots=True)
class Outage:
    """The server is unreachable: since when, why, and what is held for it."""

    error: StoreError
    since: float
    """``time.monotonic()`` of the first failed write."""
    window: float
    """Start of the current hold (a new one begins when the last one gave up)."""
    rows: int = 0
    """Rows held in this window (held and queued writes)."""
    attempts: int = 0
    lost_rows: int = 0
    """Rows given up on since the outage began."""
    retry: asyncio.TimerHandle | None = field(default=None, repr=False)


class OutageHold:
    """What a writer does while its store's server is away: hold the writes it could not
    write, try again (0.2 s, doubling to 2 s), and give them up past the store's limits
    (see :mod:`~thoughtline.runtime.engine.store_writer`)."""

    outage: Outage | None
    _loop: asyncio.AbstractEventLoop | None
    _queue: list[QueuedWrite]
    _held: list[QueuedWrite]
    _in_flight: bool
    _hold_rows: int
    _hold_s: float

    def _in_thread(self, batch: list[QueuedWrite], *, replay: bool) -> None:
        raise NotImplementedError  # the writer's: write a batch off the event loop

    def _finish(self, entries: list[QueuedWrite]) -> None:
        raise NotImplementedError  # the writer's: the entries are done

    @staticmethod
    def _report(failures: Failures, *, resolve: bool = True) -> None:
        for entry, error in failures:
            if resolve and entry.done is not None and not entry.done.done():
                entry.done.set_exception(error)
            if entry.on_failure is None:
                if entry.done is None:
                    logger.error("a write to the store failed: %s", error.message)
                continue
            try:
                entry.on_failure(error)
            except Exception:
                logger.exception("reporting a failed store write failed")

    # -- while the server is away ----------------------------------------------------
    def _hold(self, batch: list[QueuedWrite], error: StoreError) -> None:
        """``batch`` could not be written because the server is away: hold it, in
        front of what was queued since, and try again later."""
        now = time.monotonic()
        outage = self.outage
        if outage is None:
            outage = self.outage = Outage(error, since=now, window=now)
            logger.warning(
                "thoughtline: the store cannot be reached (%s); holding its writes for up "
                "to %g s or %d rows until it is back",
                error.message,
                self._hold_s,
                self._hold_rows,
            )
        else:
            outage.error = error
            outage.attempts += 1
        refused = [entry for entry in batch if not entry.held]
        self._report([(entry, error) for entry in refused])
        self._finish(refused)
        self._held = [entry for entry in batch if entry.held]
        for entry in self._held + self._queue:
            if not entry.rows:
                entry.rows = rows_of(entry.write)
        outage.rows = sum(entry.rows for entry in self._held + self._queue)
        if not self._limit_rows():
            self._limit_time(now)
        self._retry_later()

    def _retry_later(self) -> None:
        outage, loop = self.outage, self._loop
        if outage is None or loop is None or outage.retry is not None:
            return
        delay = min(RETRY_MAX_S, RETRY_FIRST_S * 2**outage.attempts)
        outage.retry = loop.call_later(delay, self._retry_now)

    def _retry_now(self) -> None:
        outage = self.outage
        if outage is None:
            return
        outage.retry = None
        if self._in_flight:
            self._retry_later()
            return
        self._limit_time(time.monotonic())
        batch, self._held, self._queue = self._held + self._queue, [], []
        self._in_thread(batch, replay=True)

    def _back(self) -> None:
        outage = self.outage
        assert outage is not None
        if outage.retry is not None:
            outage.retry.cancel()
        self.outage = None
        logger.warning(
            "thoughtline: the store answers again after %.1f s; what was held is written%s",
            time.monotonic() - outage.since,
            f" ({outage.lost_rows} rows were given up on)" if outage.lost_rows else "",
        )

    def _limit_rows(self) -> bool:
        """Give up on what is held once it passes the row limit; True when it did."""
        outage = self.outage
        assert outage is not None
        if outage.rows <= self._hold_rows:
            return False
        self._give_up(
            f"holding its writes passed store.outage_buffer_rows ({self._hold_rows:,} rows)"
        )
        return True

    def _limit_time(self, now: float) -> None:
        outage = self.outage
        assert outage is not None
        if now - outage.window >= self._hold_s:
            self._give_up(f"it stayed unreachable past store.outage_limit_s ({self._hold_s:g} s)")

    def _give_up(self, why: str) -> None:
        """Fail every held and queued write (their runs' tasks fail and say what was
        lost); a new hold begins for what comes next."""
        outage = self.outage
        assert outage is not None
        given_up, self._held, self._queue = self._held + self._queue, [], []
        rows = sum(entry.rows for entry in given_up)
        outage.lost_rows += rows
        outage.window = time.monotonic()
        outage.rows = 0
        error = StoreError(
            "unavailable",
            f"{outage.error.message} thoughtline held {rows:,} rows in memory for "
            f"{time.monotonic() - outage.since:.0f} s and gave them up: {why}. What was "
            "written before the server went away is kept; the events held since are lost.",
            held_then_lost=True,
        )
        logger.error("thoughtline: %s", error.message)
        self._report([(entry, error) for entry in given_up])
        self._finish(given_up)


def rows_of(write: PreparedWrite) -> int:
    """How many rows ``write`` holds (what an outage's hold is bounded by)."""
    return (
        len(write.created)
        + sum(len(tasks) for _run, tasks in write.created)
        + len(write.events)
        + len(write.runs)
        + len(write.tasks)
        + len(write.trace)
        + len(write.tool_calls)
        + len(write.threads)
    )
