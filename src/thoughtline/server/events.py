"""The live event hub: runs executing in this daemon fan their events out to SSE
subscribers, and any run's snapshot can be folded up to a given ``seq`` (the frames and
the folding are :mod:`~thoughtline.server.folding`'s, exported here too).

Everything here runs on the daemon's event loop; nothing awaits while the hub's state
changes, so "take a snapshot at seq N and subscribe to everything after N" is atomic.

Each event is encoded to its SSE frame once, when it is published to a run somebody
follows, or when somebody first asks for a run nobody followed so far (most runs: a
gateway call, a CLI run); every subscriber of the run writes those same bytes. A subscriber is a cursor into the run's frames, not a
queue of its own: publishing appends one frame and wakes the subscribers that sleep
(a subscriber that is already awake is not woken again, and drains everything pending
when it runs). A subscriber that has read everything can also hand the channel its
connection's ``send`` (:meth:`Subscriber.write_directly`): the channel then writes each
new frame to all such subscribers as it is published, instead of waking one task per
subscriber for every event (and a turn of the loop later). A write that cannot finish
at once (the client reads slowly) is handed back to the subscriber's own task, which
finishes it and goes on reading by itself, so a slow client never holds up the others.
Publishing never blocks and never waits for a reader: a subscriber that has more than
its limit of frames pending since it last read sends a ``resync`` (the snapshot folded
up to the current seq) instead of them, and goes on from there.

A finished run's frames stay in memory for a while after the run has left the hub
(:class:`RetainedRuns`: at most ``DEFAULT_RETAIN_BYTES`` in all, each for at most
``DEFAULT_RETAIN_S``), so that subscribers arriving just after the end are served the
same bytes the live subscribers got instead of each replaying the run from the store.
A run nobody read while it was here is not kept: its late readers read the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from starlette.types import Send

from thoughtline.records import RunSnapshot
from thoughtline.records.run_events import RunEvent, is_terminal
from thoughtline.server.folding import (
    SnapshotFolder,
    closing_frames,
    event_frame,
    fold,
    frame,
)
from thoughtline.server.retained_runs import (
    DEFAULT_RETAIN_BYTES,
    DEFAULT_RETAIN_S,
    RetainedRun,
    RetainedRuns,
)

__all__ = [
    "DEFAULT_RETAIN_BYTES",
    "DEFAULT_RETAIN_S",
    "DEFAULT_SUBSCRIBER_QUEUE",
    "Blocked",
    "EventHub",
    "Failed",
    "RetainedRun",
    "RetainedRuns",
    "RunChannel",
    "SnapshotFolder",
    "Subscriber",
    "closing_frames",
    "event_frame",
    "fold",
    "frame",
    "start_write",
]

DEFAULT_SUBSCRIBER_QUEUE = 1000
"""How many frames a subscriber may have pending before it is sent a resync instead."""


class Blocked:
    """A direct write the server could not finish at once (its client reads slowly): the
    server's ``send`` suspended on ``waiting_on``. Awaiting this in the subscriber's own
    task finishes the write there, exactly as if that task had started it (the value the
    suspended ``send`` yielded goes to the task, then the ``send`` runs on)."""

    __slots__ = ("_steps", "_waiting_on")

    def __init__(self, steps: Generator[Any, Any, Any], waiting_on: object) -> None:
        self._steps = steps
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, None]:
        steps, waiting_on = self._steps, self._waiting_on
        while True:
            try:
                yield waiting_on
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # a cancellation thrown into the waiting task
                try:
                    waiting_on = steps.throw(exc)
                except StopIteration:
                    return
                continue
            break
        yield from steps


class Failed:
    """A direct write that raised: the subscriber's task raises it."""

    __slots__ = ("error",)

    def __init__(self, error: Exception) -> None:
        self.error = error


def start_write(send: Send, body: bytes) -> Blocked | Failed | None:
    """Run the server's ``send`` of one body chunk as far as it goes without waiting:
    None when it finished (the usual case, a socket write), else what is left of it."""
    steps = send({"type": "http.response.body", "body": body, "more_body": True}).__await__()
    try:
        waiting_on = steps.send(None)
    except StopIteration:
        return None
    except Exception as exc:
        return Failed(exc)
    return Blocked(steps, waiting_on)


class Subscriber:
    """One SSE reader of a live run: how far it has read the run's frames.

    ``cursor`` is the number of frames it has (frame ``i`` is the event of seq ``i + 1``);
    ``seen`` is how many frames the run had when it last read, so ``len(frames) - seen``
    is what was published since. ``direct`` is set while the channel writes for it.

    Waiting costs one future: the keep-alive timer is one per subscriber, rescheduled
    only when it fires (a timer per wait meant a timer made and cancelled for every
    event delivered, to every subscriber)."""

    __slots__ = (
        "_channel",
        "_frames",
        "_timer",
        "_waiter",
        "_waiting_since",
        "cursor",
        "direct",
        "seen",
    )

    def __init__(self, channel: RunChannel, cursor: int) -> None:
        self._channel = channel
        self._frames = channel.frames
        self._waiter: asyncio.Future[object] | None = None
        self._waiting_since = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self.cursor = cursor
        self.seen = len(self._frames)
        self.direct: Send | None = None

    def notify(self) -> None:
        """Wake the reader if it sleeps (called by the channel on every publish, for a
        subscriber it does not write for)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    def pending(self) -> bool:
        """Whether something was published since the last read, or is left to send."""
        return len(self._frames) > min(self.seen, self.cursor)

    def behind(self, limit: int) -> bool:
        """More than ``limit`` frames were published since the last read."""
        return len(self._frames) - self.seen > limit

    def take(self) -> list[bytes]:
        """Every frame after the cursor, moving the cursor past them."""
        frames = self._frames
        end = len(frames)
        taken = frames[self.cursor : end] if self.cursor < end else []
        self.skip()
        return taken

    def skip(self) -> None:
        """Move past everything published so far (after a resync)."""
        end = len(self._frames)
        self.seen = end
        self.cursor = max(self.cursor, end)

    async def wait(self, timeout_s: float) -> bool:
        """Wait until something is pending (True) or ``timeout_s`` passed without it
        (False)."""
        if self.pending():
            return True
        outcome = await self._park(timeout_s)
        assert isinstance(outcome, bool)
        return outcome

    async def write_directly(self, send: Send, timeout_s: float) -> bool:
        """Let the channel write every new frame to ``send`` until it lets go: True when
        the stream has something to do (the run ended, or a write the client was slow
        for was finished here and more may be pending), False once ``timeout_s`` passed
        without a write (a keep-alive is due). Raises what a write raised.

        The subscriber must have read everything published so far."""
        assert not self.pending(), "a subscriber hands over its send only when caught up"
        self.direct = send
        self._channel.direct.add(self)
        try:
            outcome = await self._park(timeout_s)
        finally:
            self._detach()
        if isinstance(outcome, Blocked):
            await outcome
            return True
        if isinstance(outcome, Failed):
            raise outcome.error
        assert isinstance(outcome, bool)
        return outcome

    async def _park(self, timeout_s: float) -> object:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[object] = loop.create_future()
        self._waiting_since = loop.time()
        if self._timer is None:
            self._timer = loop.call_at(self._waiting_since + timeout_s, self._tick, timeout_s)
        self._waiter = waiter
        try:
            return await waiter
        finally:
            self._waiter = None

    def wrote(self, end: int, now: float) -> None:
        """The channel wrote every frame before ``end`` for this subscriber at ``now``
        (loop time): a keep-alive is due ``timeout_s`` after the last write."""
        self.cursor = self.seen = end
        self._waiting_since = now

    def release(self, outcome: Blocked | Failed | bool) -> None:
        """The channel stops writing for this subscriber and wakes its task with
        ``outcome``."""
        self._detach()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(outcome)

    def _detach(self) -> None:
        if self.direct is not None:
            self.direct = None
            self._channel.direct.discard(self)

    def _tick(self, timeout_s: float) -> None:
        """The keep-alive timer: expire a wait that lasted ``timeout_s``, else come back
        when the current (or the next) wait would."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        waiter = self._waiter
        due = now + timeout_s
        if waiter is not None and not waiter.done():
            if now - self._waiting_since >= timeout_s:
                self.release(False)
            else:
                due = self._waiting_since + timeout_s
        self._timer = loop.call_at(due, self._tick, timeout_s)

    def close(self) -> None:
        """Stop the keep-alive timer and the channel's writes (the reader is gone)."""
        self._detach()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class RunChannel:
    """A run executing in this daemon: its events so far, their SSE frames, its folded
    snapshot and its subscribers.

    While nobody follows the run (a gateway call, a CLI run through the daemon, most
    runs), publishing only keeps the event: its frame and its place in the snapshot are
    made when somebody asks for them (a subscriber, a snapshot, the run's end kept for
    late readers), all at once. A run with subscribers has each event framed and folded
    as it is published, and written to them at once."""

    def __init__(self, run_id: str, planned: RunSnapshot) -> None:
        self.run_id = run_id
        self.planned = planned
        self._frames: list[bytes] = []
        self._folder = SnapshotFolder(planned)
        self._unframed: list[RunEvent] = []
        """Events published since the last catch-up, not yet framed nor folded."""
        self._closing: tuple[bytes, bytes] | None = None
        self.subscribers: set[Subscriber] = set()
        self.direct: set[Subscriber] = set()
        """The subscribers this channel writes for (see :meth:`Subscriber.write_directly`)."""
        self.finished = False
        self.followed = False
        """Whether anybody asked for the run's frames or snapshot while it was here."""

    @property
    def frames(self) -> list[bytes]:
        """The SSE frame of every event so far; events are numbered from 1 in order."""
        self._asked()
        return self._frames

    @property
    def folder(self) -> SnapshotFolder:
        """The run's snapshot, folded up to its last event."""
        self._asked()
        return self._folder

    @property
    def closing(self) -> tuple[bytes, bytes] | None:
        """Once the run ended: the snapshot just before its terminal event, then the
        terminal event (what a fresh connection to a finished run gets)."""
        self._asked()
        return self._closing

    @property
    def seq(self) -> int:
        return self.folder.seq

    def publish(self, event: RunEvent) -> None:
        if is_terminal(event):
            self.finished = True
        if not self.subscribers:
            self._unframed.append(event)
            return
        if self._unframed:
            self._catch_up()
        self._add(event)
        for subscriber in self.subscribers:
            if subscriber.direct is None:
                subscriber.notify()
        if self.direct:
            # Now rather than in a callback: a turn of the loop later cost a delta
            # about a millisecond at the median (bench/README.md, "Daemon fan-out").
            self._write_direct()

    def _asked(self) -> None:
        """Somebody reads the run here: every event so far framed and folded."""
        self.followed = True
        if self._unframed:
            self._catch_up()

    def _catch_up(self) -> None:
        events, self._unframed = self._unframed, []
        for event in events:
            self._add(event)

    def _add(self, event: RunEvent) -> None:
        data = event_frame(event)
        if is_terminal(event):
            # The folder holds every event before this one: the snapshot before the end.
            self._closing = (frame(event.seq - 1, "snapshot", self._folder.snapshot()), data)
        self._frames.append(data)
        self._folder.apply(event)

    def _write_direct(self) -> None:
        """Write what was published since the last write to every subscriber this
        channel writes for; let go of the ones whose write could not finish at once
        (or failed), and of all of them once the run has ended. A write does not
        raise: its failure goes to the subscriber's own task."""
        frames = self.frames
        end = len(frames)
        now = asyncio.get_running_loop().time()
        ended = self.closing is not None
        bodies: dict[int, bytes] = {}  # by cursor: subscribers that are level share one
        for subscriber in tuple(self.direct):
            send = subscriber.direct
            cursor = subscriber.cursor
            if send is not None and cursor < end:
                body = bodies.get(cursor)
                if body is None:
                    body = bodies[cursor] = b"".join(frames[cursor:end])
                subscriber.wrote(end, now)
                outcome = start_write(send, body)
                if outcome is not None:
                    subscriber.release(outcome)
                    continue
            if ended:
                subscriber.release(True)

    def subscribe(self, after: int | None = None) -> Subscriber:
        """A reader of every frame after seq ``after`` (None: of what comes next)."""
        cursor = len(self.frames) if after is None else max(after, 0)
        subscriber = Subscriber(self, cursor)
        self.subscribers.add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.discard(subscriber)
        subscriber.close()


class EventHub:
    """Channels of the runs executing in this daemon, fed by the runtime observer, and
    the frames of runs that finished lately."""

    def __init__(
        self,
        subscriber_queue: int = DEFAULT_SUBSCRIBER_QUEUE,
        retain_bytes: int = DEFAULT_RETAIN_BYTES,
        retain_s: float = DEFAULT_RETAIN_S,
    ) -> None:
        self.subscriber_queue = subscriber_queue
        self._channels: dict[str, RunChannel] = {}
        self.retained = RetainedRuns(retain_bytes, retain_s)

    def open(self, run_id: str, planned: RunSnapshot) -> RunChannel:
        channel = RunChannel(run_id, planned)
        self._channels[run_id] = channel
        return channel

    def close(self, run_id: str) -> None:
        """Forget a run once everything it emitted is in the store (its frames stay in
        :attr:`retained` for a while)."""
        channel = self._channels.pop(run_id, None)
        if channel is not None:
            self.retained.keep(channel)

    def get(self, run_id: str) -> RunChannel | None:
        return self._channels.get(run_id)

    def observe(self, event: RunEvent) -> None:
        """The runtime observer: called synchronously on the loop for every event."""
        channel = self._channels.get(event.run_id)
        if channel is not None:
            channel.publish(event)

    def run_ids(self) -> list[str]:
        return list(self._channels)
