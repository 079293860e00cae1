"""Group commit: every run of a runtime writes through one writer, many transitions per
transaction.

A transition (a task started or finished, a run's start and end) is turned into rows
when it happens (:meth:`Store.prepare`) and queued here; the run goes on at once. The
writer commits what is queued within :data:`COMMIT_DELAY_S`, in order, in one
transaction, so a row never says more than the event log written with it. Live deltas
are collected from every run that has some, every ``store.live_flush_s``, into the same
transactions. ``await writer.flush()`` returns once everything queued before it is
written; a run awaits it before it reports its end.

Where the transaction runs is the store's nature:

- **SQLite** on the event loop, when the file's write lock is free (it is tried without
  waiting). A batch is a local transaction of well under a millisecond; in a thread it
  would be slower, because Python's ``sqlite3`` releases the GIL for every row and the
  thread then waits for the busy event loop to hand it back (measured: about 1,000 rows
  a second instead of 200,000). Checkpoints, the slow part of SQLite writes, have a
  thread of their own (:mod:`thoughtline.store._sqlite_checkpoint`). When another
  process holds the lock (a CLI run writing the same file), the batch waits for it in
  the writer's thread, so the event loop keeps serving.
- **PostgreSQL** in a thread of its own: a commit waits for the server, and psycopg
  releases the GIL only while it waits, a few times per transaction.

A write that fails is reported to whoever queued it (``on_failure``); the writes of
other runs in the same batch are then written one by one, so only the runs whose own
writes fail learn of a failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, Protocol

from thoughtline.store.base import PreparedWrite, RunNotFoundError, Store, StoreError

__all__ = ["COMMIT_DELAY_S", "LiveSource", "StoreWriter"]

logger = logging.getLogger(__name__)

COMMIT_DELAY_S: Final = 0.01
"""How long a transition may wait for others to share its transaction (local stores)."""
LOOP_BATCH: Final = 64
"""At most this many writes per transaction on the event loop (a few milliseconds);
the rest follow in the next loop iteration, so streams are served in between."""

FailureCallback = Callable[[StoreError], None]
Failures = list[tuple[FailureCallback | None, StoreError]]


class LiveSource(Protocol):
    """A run with live events waiting for the event log."""

    def take_live(self) -> PreparedWrite | None:
        """The live events gathered since the last take, prepared (None: nothing)."""
        ...

    def store_failed(self, error: StoreError) -> None: ...


class StoreWriter:
    """Writes the prepared writes of every run of one runtime, many per transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.in_thread = store.writes_wait_on_network
        self.commit_delay_s = 0.0 if self.in_thread else COMMIT_DELAY_S
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: list[tuple[PreparedWrite, FailureCallback | None]] = []
        self._live: dict[LiveSource, None] = {}  # an ordered set
        self._commit: asyncio.Handle | None = None
        self._live_timer: asyncio.TimerHandle | None = None
        self._in_flight = False
        self._executor: ThreadPoolExecutor | None = None
        self._queued = 0  # writes queued since this loop was bound
        self._written = 0  # of which written (or failed)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    # -- queueing ------------------------------------------------------------------
    def submit(self, write: PreparedWrite, on_failure: FailureCallback | None = None) -> None:
        """Queue a write; it is committed within :data:`COMMIT_DELAY_S`."""
        loop = self._bind()
        self._queue.append((write, on_failure))
        self._queued += 1
        if self._commit is None and not self._in_flight:
            self._commit = (
                loop.call_later(self.commit_delay_s, self._commit_now)
                if self.commit_delay_s
                else loop.call_soon(self._commit_now)
            )

    def want_live(self, source: LiveSource) -> None:
        """``source`` has live events: take them within ``store.live_flush_s``."""
        loop = self._bind()
        self._live[source] = None
        if self._live_timer is None:
            self._live_timer = loop.call_later(self.store.live_flush_s, self._collect_live)

    async def write(self, write: PreparedWrite) -> None:
        """Queue a write and wait until it is committed; raises what it failed with."""
        failures: list[StoreError] = []
        self.submit(write, failures.append)
        await self.flush()
        if failures:
            raise failures[0]

    async def flush(self) -> None:
        """Return once every write queued so far is written (or has failed, which its
        ``on_failure`` was told)."""
        loop = self._bind()
        target = self._queued
        if self._written >= target:
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((target, waiter))
        self._commit_soon()
        await waiter

    async def aclose(self) -> None:
        """Write what is queued and stop the writer's thread (if it has one)."""
        if self._loop is not None:
            await self.flush()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    # -- committing ------------------------------------------------------------------
    def _bind(self) -> asyncio.AbstractEventLoop:
        """The running loop; a runtime used from a new loop (a second ``asyncio.run``)
        first writes what the old one left queued, synchronously."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            leftover, self._queue = self._queue, []
            self._report(self._write(leftover, wait=True) or [])
            self._loop, self._commit, self._live_timer = loop, None, None
            self._live.clear()
            self._in_flight = False
            self._queued = self._written = 0
            self._waiters = []
        return loop

    def _commit_soon(self) -> None:
        if self._in_flight or self._loop is None:
            return  # the commit in flight commits the rest when it ends
        if self._commit is not None:
            self._commit.cancel()
        self._commit = self._loop.call_soon(self._commit_now)

    def _collect_live(self) -> None:
        self._live_timer = None
        sources = list(self._live)
        self._live.clear()
        for source in sources:
            write = source.take_live()
            if write is not None:
                self._queue.append((write, source.store_failed))
                self._queued += 1
        if self._commit is None and not self._in_flight:
            self._commit_now()

    def _commit_now(self) -> None:
        self._commit = None
        if self._in_flight or not self._queue:
            return
        if self.in_thread:
            batch, self._queue = self._queue, []
        else:
            batch, self._queue = self._queue[:LOOP_BATCH], self._queue[LOOP_BATCH:]
            failures = self._write(batch, wait=False)
            if failures is not None:
                self._report(failures)
                self._written += len(batch)
                self._wake()
                return
            # Another process holds the store's lock: wait for it off the event loop.
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="thoughtline store writer")
        assert self._loop is not None
        self._in_flight = True
        done = self._loop.run_in_executor(self._executor, self._write_waiting, batch)
        done.add_done_callback(lambda future: self._thread_done(future, len(batch)))

    def _write_waiting(self, batch: list[tuple[PreparedWrite, FailureCallback | None]]) -> Failures:
        failures = self._write(batch, wait=True)
        assert failures is not None
        return failures

    def _thread_done(self, future: asyncio.Future[Failures], count: int) -> None:
        self._in_flight = False
        self._report(future.result())
        self._written += count
        self._wake()

    def _wake(self) -> None:
        """Release the flushes now satisfied; commit at once what others wait for."""
        waiting = []
        for target, waiter in self._waiters:
            if target <= self._written:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((target, waiter))
        self._waiters = waiting
        if self._queue and self._commit is None and self._loop is not None:
            if waiting or self.in_thread or len(self._queue) >= LOOP_BATCH:
                self._commit = self._loop.call_soon(self._commit_now)
            else:
                self._commit = self._loop.call_later(self.commit_delay_s, self._commit_now)

    def _write(
        self, batch: list[tuple[PreparedWrite, FailureCallback | None]], *, wait: bool
    ) -> Failures | None:
        """Write a batch in one transaction; when that fails, each write alone (a
        callback whose write failed gets no later write of the batch). The failures;
        None when ``wait`` is False and the store would first wait for a lock."""
        if not batch:
            return []
        try:
            if not self.store.write_prepared([write for write, _ in batch], wait=wait):
                return None
            return []
        except Exception as exc:
            if len(batch) == 1:
                return [(batch[0][1], _as_store_error(exc))]
        failures: Failures = []
        failed: list[FailureCallback] = []  # bound methods compare equal, not identical
        for write, on_failure in batch:
            if on_failure is not None and on_failure in failed:
                continue
            try:
                self.store.write_prepared([write])
            except Exception as exc:
                failures.append((on_failure, _as_store_error(exc)))
                if on_failure is not None:
                    failed.append(on_failure)
        return failures

    @staticmethod
    def _report(failures: Failures) -> None:
        for on_failure, error in failures:
            if on_failure is None:
                logger.error("a write to the store failed: %s", error.message)
                continue
            try:
                on_failure(error)
            except Exception:
                logger.exception("reporting a failed store write failed")


def _as_store_error(exc: Exception) -> StoreError:
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, RunNotFoundError):
        return StoreError("unavailable", exc.message)
    logger.error("writing to the store failed unexpectedly", exc_info=exc)
    return StoreError("unavailable", f"Writing to the store failed: {type(exc).__name__}: {exc}")
