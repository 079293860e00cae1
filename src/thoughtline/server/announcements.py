"""Waking the streams that follow runs of other processes, and reading for them at once.

A run executing in another daemon (or a CLI process) reaches this daemon only through the
store's run event log. A store that announces appends (PostgreSQL: ``LISTEN``/``NOTIFY``
carrying the run id and the range of event numbers a commit wrote; the events themselves
stay in the table) makes this daemon read the new events as soon as the append commits.
A store that does not (SQLite) leaves the streams polling every ``poll_s``; so does a
lost announcement, as a stream's wait always ends after ``poll_s``.

One listener per daemon, on a thread of its own (the driver's wait blocks), hands each
announcement to the event loop. There, every followed run has one :class:`RunFeed`
shared by all its streams. A wake-up reads what was announced for every feed at once:
one query (``run_events_after``: each run's events after the last its feed has), however
many runs and streams, since a daemon's writer commits all its runs' live events
together and a query costs far more than its rows. Each feed keeps the frames and wakes
its streams, which take what follows their own cursor from memory. Memory is bounded: a
stream that lags behind what a feed holds (or joins from an older event) reads the store
itself, as on a poll.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from starlette.types import Send

from thoughtline.records import RunEventRecord
from thoughtline.records.event_log import from_records
from thoughtline.records.run_events import is_terminal
from thoughtline.server.events import Blocked, Failed, event_frame, start_write
from thoughtline.store.base import Store

__all__ = ["Announcements", "FeedFrame", "Follower", "RunFeed", "frames_after"]

logger = logging.getLogger(__name__)

_WAIT_S = 0.5  # how long the listener thread waits before it checks whether to stop
FEED_FRAMES = 4096
"""At most this many frames of a run are kept for its streams (each delta is one)..."""
FEED_BYTES = 1024 * 1024
"""... and at most this many bytes; a stream behind what is kept reads the store."""

FeedFrame = tuple[int, bytes, bool]
"""One event of a feed: its seq, its SSE frame, whether it ends the run."""


class _Announced(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def seq(self) -> int: ...


class _Listener(Protocol):
    def wait(self, timeout_s: float, *, limit: int | None = None) -> list[_Announced]: ...

    def close(self) -> None: ...


@runtime_checkable
class _Announcing(Protocol):
    def listen(self) -> _Listener: ...


class Follower:
    """One stream following one run: :meth:`wait` returns when the run's feed read new
    events since the last :meth:`ready` (or, for a store without announcements, never
    before ``timeout_s``); :meth:`take` hands over what the feed holds. A stream that
    sent everything may instead let the feed write for it (:meth:`write_directly`)."""

    __slots__ = ("_waiter", "cursor", "direct", "ended", "feed", "woken")

    def __init__(self, feed: RunFeed, after: int) -> None:
        self.woken = False
        self.feed = feed
        self.cursor = after  # the last seq this stream sent
        self.direct: Send | None = None
        """Set while the feed writes this stream's frames itself."""
        self.ended = False
        """The feed wrote the run's terminal event for this stream."""
        self._waiter: asyncio.Future[object] | None = None

    def ready(self) -> None:
        """Call before reading: new events from here on wake :meth:`wait`."""
        self.woken = False

    def wake(self) -> None:
        self.woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def waiting(self) -> bool:
        """Whether the stream waits for its feed (it has sent what it read)."""
        return self._waiter is not None

    async def wait(self, timeout_s: float) -> bool:
        """Whether woken (else ``timeout_s`` passed). One future and one timer, not a
        task per wait: the feed of a busy run wakes its streams tens of times a second."""
        if self.woken:
            return True
        await self._park(timeout_s)
        return self.woken

    async def write_directly(self, send: Send, timeout_s: float) -> bool:
        """Let the feed write the frames it reads next straight to ``send`` (the
        server's own), as the daemon's channels do for their runs' caught-up streams:
        one pass over the streams per read, not a task woken per stream. Returns when
        the feed let go: True when woken (it wrote, and the stream may go on from
        :attr:`cursor`; or it holds frames this stream must take itself), False once
        ``timeout_s`` passed. Raises what a write raised."""
        if self.woken:
            return True
        self.direct = send
        try:
            outcome = await self._park(timeout_s)
        finally:
            self.direct = None
        if isinstance(outcome, Blocked):
            await outcome  # a slow client: the write finishes in the stream's own task
        elif isinstance(outcome, Failed):
            raise outcome.error
        return self.woken

    async def _park(self, timeout_s: float) -> object:
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout_s, _expire, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def release(self, outcome: object) -> None:
        """Stop writing for this stream and wake its task with ``outcome``."""
        self.direct = None
        self.woken = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(outcome)

    def take(self, after: int) -> list[FeedFrame] | None:
        """The feed's frames of events after ``after``, in order; ``None`` when the feed
        no longer holds (or never held) all of them: read the store."""
        return self.feed.after(after)

    def sent(self, seq: int) -> None:
        """The stream sent everything up to ``seq``: the feed may forget it."""
        self.cursor = seq

    def close(self) -> None:
        self.feed.release(self)


def _expire(waiter: asyncio.Future[object]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class RunFeed:
    """The events of one run executing elsewhere, read once per announcement for every
    stream that follows it.

    The feed holds every event numbered in ``(base, last]`` (those ``frames`` had to
    drop raise ``base``): a stream whose cursor is at least ``base`` takes what follows
    it from here, one that is behind reads the store."""

    def __init__(self, run_id: str, after: int, release: Callable[[RunFeed], None]) -> None:
        self.run_id = run_id
        self.base = self.last = after
        self.announced = after  # the highest seq announced so far
        self.frames: list[FeedFrame] = []
        self.size = 0
        self.followers: set[Follower] = set()
        self._release = release

    def follow(self, after: int) -> Follower:
        follower = Follower(self, after)
        self.followers.add(follower)
        return follower

    def release(self, follower: Follower) -> None:
        self.followers.discard(follower)
        if not self.followers:
            self._release(self)

    def after(self, after: int) -> list[FeedFrame] | None:
        if after < self.base:
            return None
        start = bisect.bisect_right(self.frames, after, key=lambda item: item[0])
        return self.frames[start:]

    def wants(self, last: int) -> bool:
        """Events up to ``last`` were committed: whether the feed must read them."""
        self.announced = max(self.announced, last)
        return self.announced > self.last

    def deliver(self, frames: list[FeedFrame], newest: int) -> None:
        """What a read found after :attr:`last`: its frames, and the last seq it read
        (past events of types this version does not know, which are left out)."""
        if newest <= self.last:
            # Announced but not visible to this read (or deleted since): the streams'
            # polls find whatever there is.
            self.announced = self.last
            return
        self._add(frames)
        self.last = newest
        bodies: dict[int, tuple[bytes, bool]] = {}  # by cursor: level streams share one
        for follower in tuple(self.followers):
            send = follower.direct
            if send is None or follower.cursor < self.base:
                follower.wake()  # it takes the frames itself (or reads the store)
                continue
            shared = bodies.get(follower.cursor)
            if shared is None:
                held = self.after(follower.cursor) or []
                shared = bodies[follower.cursor] = (
                    b"".join(data for _, data, _ in held),
                    bool(held) and held[-1][2],
                )
            body, ended = shared
            if body:
                follower.cursor = newest
                follower.ended = ended
                outcome = start_write(send, body)
                if outcome is not None or ended:
                    follower.release(outcome)

    def _add(self, frames: list[FeedFrame]) -> None:
        """Keep ``frames``; forget what every stream sent, then what exceeds the bounds."""
        kept = self.frames
        kept += frames
        size = self.size + sum(len(data) for _, data, _ in frames)
        sent = min((follower.cursor for follower in self.followers), default=self.last)
        drop = bisect.bisect_right(kept, sent, key=lambda item: item[0])
        size -= sum(len(data) for _, data, _ in kept[:drop])
        while drop < len(kept) and (len(kept) - drop > FEED_FRAMES or size > FEED_BYTES):
            size -= len(kept[drop][1])
            drop += 1
        if drop:
            self.base = max(self.base, kept[drop - 1][0])
            del kept[:drop]
        self.size = size


class Announcements:
    """The daemon's one listener for run event announcements (when its store has them)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._feeds: dict[str, RunFeed] = {}
        self._wanted: dict[str, RunFeed] = {}  # feeds with announced events to read
        self._reading: asyncio.Task[None] | None = None
        self.reads = 0  # queries made for feeds (a figure for tests and benchmarks)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.listening = threading.Event()
        """Set once the listener's LISTEN is in place: an append committed before it
        is not announced (its streams find it by polling)."""

    @property
    def active(self) -> bool:
        """Whether announcements arrive (else followers only poll)."""
        return self._thread is not None

    def start(self) -> None:
        if not isinstance(self._store, _Announcing) or self._thread is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(
            target=self._listen, args=(self._store,), name="thoughtline-announcements", daemon=True
        )
        self._thread.start()

    def follow(self, run_id: str, after: int = 0) -> Follower:
        """A follower of ``run_id`` for a stream that has sent everything up to ``after``."""
        feed = self._feeds.get(run_id)
        if feed is None:
            feed = self._feeds[run_id] = RunFeed(run_id, after, self._forget)
        return feed.follow(after)

    def feed(self, run_id: str) -> RunFeed | None:
        return self._feeds.get(run_id)

    def _forget(self, feed: RunFeed) -> None:
        if self._feeds.get(feed.run_id) is feed:
            del self._feeds[feed.run_id]

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * _WAIT_S)
            self._thread = None

    def _listen(self, store: _Announcing) -> None:
        loop = self._loop
        assert loop is not None
        listener: _Listener | None = None
        while not self._stop.is_set():
            try:
                if listener is None:
                    listener = store.listen()
                    self.listening.set()
                # Back as soon as one arrives, then whatever else is already there.
                announced = listener.wait(_WAIT_S, limit=1)
                if announced:
                    announced += listener.wait(0)
            except Exception:  # the server went away: streams poll until it is back
                logger.warning("run event announcements stopped; streams poll meanwhile")
                if listener is not None:
                    listener.close()
                    listener = None
                self._stop.wait(_WAIT_S)
                continue
            if announced:
                last: dict[str, int] = {}
                for item in announced:
                    last[item.run_id] = max(item.seq, last.get(item.run_id, 0))
                loop.call_soon_threadsafe(self._wake, last)
        if listener is not None:
            listener.close()

    def _wake(self, announced: dict[str, int]) -> None:
        for run_id, last in announced.items():
            feed = self._feeds.get(run_id)
            if feed is not None and feed.wants(last):
                self._wanted[run_id] = feed
        if self._wanted and self._reading is None:
            self._reading = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        """Read what the feeds were announced: one query for all of them, again while
        announcements arrived during the last."""
        try:
            while self._wanted:
                feeds, self._wanted = self._wanted, {}
                after = {run_id: feed.last for run_id, feed in feeds.items()}
                self.reads += 1
                try:
                    found = await asyncio.to_thread(_read_runs, self._store, after)
                except Exception as exc:  # the streams' own polls read it later
                    logger.debug("reading followed runs failed: %r", exc)
                    continue
                for run_id, feed in feeds.items():
                    if self._feeds.get(run_id) is feed:
                        feed.deliver(*found.get(run_id, ([], after[run_id])))
        finally:
            self._reading = None


@runtime_checkable
class _ReadingMany(Protocol):
    def run_events_after(self, after: Mapping[str, int]) -> dict[str, list[RunEventRecord]]: ...


def _read_runs(store: Store, after: Mapping[str, int]) -> dict[str, tuple[list[FeedFrame], int]]:
    """Each run's frames of the events after its number in ``after``, and the last seq
    read (in a thread: the query, and turning rows into frames)."""
    if isinstance(store, _ReadingMany):
        found = store.run_events_after(after)
    else:
        found = {run_id: store.run_events(run_id, after_seq=seq) for run_id, seq in after.items()}
    return {run_id: frames_after(records, after[run_id]) for run_id, records in found.items()}


def frames_after(records: list[RunEventRecord], seq: int) -> tuple[list[FeedFrame], int]:
    """The frames of the events of ``records`` after ``seq`` and the last seq they hold
    (past events of types this version does not know, which are left out)."""
    events = from_records(records, after_seq=seq)
    frames = [(event.seq, event_frame(event), is_terminal(event)) for event in events]
    return frames, records[-1].seq if records else seq
