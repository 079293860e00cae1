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

**When the server goes away** (a store that is :class:`OutageBuffered`: PostgreSQL
restarted, failed over, unreachable), failing every run would lose the streams its
daemon still serves. The writer instead *holds* what it could not write, in order, and
tries again (0.2 s, doubling to 2 s); once the server answers, everything held is
written in one transaction as a *replay* (rows a lost connection may already have
committed are kept, never stored twice). The hold is bounded: past
``outage_buffer_rows`` rows, or ``outage_limit_s`` seconds, every held write fails with
``unavailable`` (the runs' tasks then fail ``STORE_UNAVAILABLE``, saying what was lost)
and a new window begins for what the runs write next (their ends). A run's creation is
never held: while the server is away it fails at once, so a new run is refused rather
than started without a record.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Final, Protocol

from thoughtline.runtime.engine.store_outage import (
    FailureCallback,
    Failures,
    Outage,
    OutageHold,
    QueuedWrite,
    rows_of,
)
from thoughtline.store.base import (
    OutageBuffered,
    PreparedWrite,
    RunNotFoundError,
    Store,
    StoreError,
)

__all__ = ["COMMIT_DELAY_S", "LiveSource", "Outage", "StoreWriter"]

logger = logging.getLogger(__name__)

COMMIT_DELAY_S: Final = 0.01
"""How long a transition may wait for others to share its transaction (local stores)."""
LOOP_BATCH: Final = 64
"""At most this many writes per transaction on the event loop (a few milliseconds);
the rest follow in the next loop iteration, so streams are served in between."""


class LiveSource(Protocol):
    """A run with live events waiting for the event log."""

    def take_live(self) -> PreparedWrite | None:
        """The live events gathered since the last take, prepared (None: nothing)."""
        ...

    def store_failed(self, error: StoreError) -> None: ...


class StoreWriter(OutageHold):
    """Writes the prepared writes of every run of one runtime, many per transaction."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.in_thread = store.writes_wait_on_network
        self.commit_delay_s = 0.0 if self.in_thread else COMMIT_DELAY_S
        # Only a store on a server goes away and comes back; a file that fails is damaged
        # or full, and waiting would not mend it.
        self._holds = self.in_thread and isinstance(store, OutageBuffered)
        self._hold_rows = store.outage_buffer_rows if isinstance(store, OutageBuffered) else 0
        self._hold_s = store.outage_limit_s if isinstance(store, OutageBuffered) else 0.0
        self.outage: Outage | None = None
        """Set while the server is unreachable (see the module's docstring)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: list[QueuedWrite] = []
        self._held: list[QueuedWrite] = []  # written before the queue, once the server is back
        self._live: dict[LiveSource, None] = {}  # an ordered set
        self._commit: asyncio.Handle | None = None
        self._live_timer: asyncio.TimerHandle | None = None
        self._in_flight = False
        self._executor: ThreadPoolExecutor | None = None
        self._next = 0  # the next write's number
        self._open: list[int] = []  # numbers of writes not yet finished (a heap)
        self._closed: set[int] = set()  # finished, still in the heap
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    # -- queueing ------------------------------------------------------------------
    def submit(
        self,
        write: PreparedWrite,
        on_failure: FailureCallback | None = None,
        *,
        hold: bool = True,
        done: asyncio.Future[None] | None = None,
    ) -> None:
        """Queue a write; it is committed within :data:`COMMIT_DELAY_S`. With
        ``hold=False`` it fails at once while the server is away instead of waiting for
        it. ``done`` is resolved (or given the error) when the write is finished."""
        loop = self._bind()
        entry = QueuedWrite(self._next, write, on_failure, hold, done)
        self._next += 1
        heapq.heappush(self._open, entry.seq)
        outage = self.outage
        if outage is not None:
            if not hold:
                self._report([(entry, outage.error)])
                self._finish([entry])
                return
            entry.rows = rows_of(write)
            outage.rows += entry.rows
            self._queue.append(entry)
            self._limit_rows()
            return
        self._queue.append(entry)
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

    async def write(self, write: PreparedWrite, *, hold: bool = True) -> None:
        """Queue a write and wait until it is committed; raises what it failed with
        (``hold=False``: at once while the server is away)."""
        done: asyncio.Future[None] = self._bind().create_future()
        self.submit(write, None, hold=hold, done=done)
        # Its caller waits on it (a run's start: the daemon's answer, the gateway's first
        # byte): committed in the loop's next turn, with what this turn queued, rather
        # than held COMMIT_DELAY_S for company.
        self._commit_soon()
        await done

    async def flush(self) -> None:
        """Return once every write queued so far is written (or has failed, which its
        ``on_failure`` was told); while the server is away, once it is back or the hold
        gave up."""
        loop = self._bind()
        target = self._next
        if self._lowest_open() >= target:
            return
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((target, waiter))
        self._commit_soon()
        await waiter

    async def aclose(self) -> None:
        """Write what is queued and stop the writer's thread (if it has one)."""
        if self._loop is not None:
            await self.flush()
        if self.outage is not None and self.outage.retry is not None:
            self.outage.retry.cancel()
        self.outage = None
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    # -- committing ------------------------------------------------------------------
    def _bind(self) -> asyncio.AbstractEventLoop:
        """The running loop; a runtime used from a new loop (a second ``asyncio.run``)
        first writes what the old one left queued, synchronously."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            leftover, self._queue = self._held + self._queue, []
            self._held = []
            outage, self.outage = self.outage, None
            if outage is not None and outage.retry is not None:
                outage.retry.cancel()
            failures = self._write(leftover, wait=True, replay=outage is not None)
            if isinstance(failures, StoreError):
                failures = [(entry, failures) for entry in leftover]
            self._report(failures or [], resolve=False)
            self._loop, self._commit, self._live_timer = loop, None, None
            self._live.clear()
            self._in_flight = False
            self._next = 0
            self._open, self._closed = [], set()
            self._waiters = []
        return loop

    def _commit_soon(self) -> None:
        if self._in_flight or self._loop is None or self.outage is not None:
            return  # the commit in flight (or the next try) commits the rest
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
                self.submit(write, source.store_failed)

    def _commit_now(self) -> None:
        self._commit = None
        if self._in_flight or not self._queue or self.outage is not None:
            return
        if self.in_thread:
            batch, self._queue = self._queue, []
        else:
            batch, self._queue = self._queue[:LOOP_BATCH], self._queue[LOOP_BATCH:]
            failures = self._write(batch, wait=False)
            if failures is not None:
                assert not isinstance(failures, StoreError)  # only a server's store holds
                self._report(failures)
                self._finish(batch)
                return
            # Another process holds the store's lock: wait for it off the event loop.
        self._in_thread(batch, replay=False)

    def _in_thread(self, batch: list[QueuedWrite], *, replay: bool) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="thoughtline store writer")
        assert self._loop is not None
        self._in_flight = True
        done = self._loop.run_in_executor(self._executor, self._write_waiting, batch, replay)
        done.add_done_callback(lambda future: self._thread_done(future, batch))

    def _write_waiting(self, batch: list[QueuedWrite], replay: bool) -> Failures | StoreError:
        failures = self._try(batch, replay=replay)
        # The server may be back while the pool still waits to reconnect.
        store = self.store
        if replay and isinstance(failures, StoreError) and isinstance(store, OutageBuffered):
            return self._try(batch, replay=True) if store.reconnect() else failures
        return failures

    def _try(self, batch: list[QueuedWrite], *, replay: bool) -> Failures | StoreError:
        if not batch:  # the server was away and nothing is held: is it back?
            try:
                self.store.get_meta("health")
            except Exception as exc:
                return _as_store_error(exc)
            return []
        failures = self._write(batch, wait=True, replay=replay)
        assert failures is not None
        return failures

    def _thread_done(
        self, future: asyncio.Future[Failures | StoreError], batch: list[QueuedWrite]
    ) -> None:
        self._in_flight = False
        result = future.result()
        if isinstance(result, StoreError):
            self._hold(batch, result)
            return
        if self.outage is not None:
            self._back()
        self._report(result)
        self._finish(batch)

    def _finish(self, entries: list[QueuedWrite]) -> None:
        for entry in entries:
            self._closed.add(entry.seq)
            if entry.done is not None and not entry.done.done():
                entry.done.set_result(None)
        self._wake()

    def _lowest_open(self) -> int:
        """The number of the oldest write not finished (``_next`` when none)."""
        while self._open and self._open[0] in self._closed:
            self._closed.discard(heapq.heappop(self._open))
        return self._open[0] if self._open else self._next

    def _wake(self) -> None:
        """Release the flushes now satisfied; commit at once what others wait for."""
        lowest = self._lowest_open()
        waiting = []
        for target, waiter in self._waiters:
            if target <= lowest:
                if not waiter.done():
                    waiter.set_result(None)
            else:
                waiting.append((target, waiter))
        self._waiters = waiting
        if self.outage is not None:
            return
        if self._queue and self._commit is None and self._loop is not None:
            awaited = any(entry.done is not None for entry in self._queue)
            if waiting or awaited or self.in_thread or len(self._queue) >= LOOP_BATCH:
                self._commit = self._loop.call_soon(self._commit_now)
            else:
                self._commit = self._loop.call_later(self.commit_delay_s, self._commit_now)

    def _write(
        self, batch: list[QueuedWrite], *, wait: bool, replay: bool = False
    ) -> Failures | StoreError | None:
        """Write a batch in one transaction; when that fails, each write alone (a
        callback whose write failed gets no later write of the batch). The failures;
        None when ``wait`` is False and the store would first wait for a lock; the error
        when the server cannot be reached (a store that holds writes through that)."""
        if not batch:
            return []
        writes = [entry.write for entry in batch]
        if replay:
            writes = [replace(write, replayed=True) for write in writes]
        try:
            if not self.store.write_prepared(writes, wait=wait):
                return None
            return []
        except Exception as exc:
            error = _as_store_error(exc)
            if self._holds and _server_away(exc):
                return error
            if len(batch) == 1:
                return [(batch[0], error)]
        failures: Failures = []
        failed: list[FailureCallback] = []  # bound methods compare equal, not identical
        for entry, write in zip(batch, writes, strict=True):
            if entry.on_failure is not None and entry.on_failure in failed:
                continue
            try:
                self.store.write_prepared([write])
            except Exception as exc:
                error = _as_store_error(exc)
                if self._holds and _server_away(exc):
                    return error  # held whole: those written alone are kept by the replay
                failures.append((entry, error))
                if entry.on_failure is not None:
                    failed.append(entry.on_failure)
        return failures


def _server_away(exc: Exception) -> bool:
    """The store's server could not be reached (not a refused row, not a bug)."""
    return isinstance(exc, StoreError) and exc.problem == "unavailable"


def _as_store_error(exc: Exception) -> StoreError:
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, RunNotFoundError):
        return StoreError("unavailable", exc.message)
    logger.error("writing to the store failed unexpectedly", exc_info=exc)
    return StoreError("unavailable", f"Writing to the store failed: {type(exc).__name__}: {exc}")
