"""The ``text/event-stream`` of one run.

Wire format (one frame per event, UTF-8, LF line ends)::

    id: <seq>
    event: <type>
    data: <one line of JSON>
    <blank line>

- Fresh connection: first ``event: snapshot`` (the run folded up to seq N, ``id: N``),
  then every event with seq > N, ending with the terminal event (``run.completed`` /
  ``run.failed`` / ``run.cancelled`` / ``run.interrupted``, data = final snapshot);
  then the stream closes. For a finished run N is the seq just before the terminal
  event, so every stream that reaches the end of a run ends with its terminal event.
- Resume (``Last-Event-ID: N`` header or ``?last_event_id=N``): no snapshot; every event
  with seq > N.
- ``event: resync`` (data: folded snapshot, ``id:`` its seq) replaces events a slow
  reader missed.
- ``: keep-alive`` comment lines while idle.

Runs executing in this daemon are served from the in-process hub; every other run
(finished, or executing in another process sharing the store) from the store's
``run_events``, polled until the terminal event; the streams of a run executing
elsewhere share one read per append the store announces (announcements.py).

A subscriber to a live run that has read everything lets the run's channel write the
next frames for it (``Subscriber.write_directly`` in events.py), straight to the server's
``send``: publishing an event writes it to every such subscriber at once, instead of one
task waking per subscriber per event. It takes its stream back for keep-alives, at the
end of the run, and when a write cannot finish at once (a slow client).

Frames that are ready together (a backlog, a burst of deltas) go out as one write. A
client that goes away ends its stream quietly: the stream yields to the event loop
between two writes that follow each other at once, so the server learns of the closed
connection before it writes again (instead of writing a whole backlog into a dead
socket, which asyncio reports line by line), and a send that fails is logged once, at
debug level. (A live stream that waits for the next event yields anyway.)
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Iterable, Iterator

from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.records import TERMINAL_RUN_STATUSES, Run, now_iso
from thoughtline.records.event_log import from_records
from thoughtline.records.run_events import TERMINAL_EVENT_TYPES, is_terminal, run_finished
from thoughtline.server.announcements import FeedFrame, frames_after
from thoughtline.server.daemon import Daemon
from thoughtline.server.events import (
    RetainedRun,
    RunChannel,
    closing_frames,
    event_frame,
    fold,
    frame,
)
from thoughtline.store.base import Store

logger = logging.getLogger(__name__)

KEEPALIVE = b": keep-alive\n\n"
MEDIA_TYPE = "text/event-stream"
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
MAX_EVENT_ID = 2**63 - 1
"""The largest event id a client may resume from (the store's integer range)."""
_BATCH_BYTES = 64 * 1024


SERVER_SEND = "thoughtline.server_send"
"""Scope key of the server's own ``send`` (set by :class:`ServerSend`)."""


class ServerSend:
    """Outermost ASGI wrapper: keeps the server's own ``send`` in the scope, so an event
    stream can write its frames without going through every middleware's wrapper."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope[SERVER_SEND] = send
        await self.app(scope, receive, send)


class EventStreamResponse(StreamingResponse):
    """The SSE response: a client that disconnects ends it without an error.

    The response start and end go through every middleware (CORS adds its headers to
    the start; the error middlewares learn that the response began). The frames between
    go straight to the server's ``send`` when it is known: the middlewares' wrappers only
    watch for the start, and at hundreds of subscribers they were a large share of the
    work of every frame delivered."""

    _frames_send: Send | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self._frames_send = scope.get(SERVER_SEND)
        try:
            await super().__call__(scope, receive, send)
        except (ClientDisconnect, OSError) as exc:
            # Servers implementing ASGI 2.4 raise from send() once the client is gone.
            logger.debug("event stream %s: the client went away (%r)", scope.get("path"), exc)
        except asyncio.CancelledError:
            logger.debug("event stream %s ended before its last event", scope.get("path"))
            raise

    async def stream_response(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        frames_send = self._frames_send or send
        if isinstance(self.body_iterator, LiveFrames | StoredFrames):
            # The channel may write for this stream only to the server's own send: it
            # runs the send outside this task, which only a send that needs no task of
            # its own allows (uvicorn's; ServerSend says it is there).
            self.body_iterator.direct = self._frames_send
        async for chunk in self.body_iterator:
            assert isinstance(chunk, bytes)
            await frames_send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _batched(frames: Iterable[bytes]) -> Iterator[bytes]:
    """Consecutive frames joined into writes of about ``_BATCH_BYTES``."""
    batch: list[bytes] = []
    size = 0
    for data in frames:
        batch.append(data)
        size += len(data)
        if size >= _BATCH_BYTES:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


class LiveFrames:
    """The frames of a run executing in this daemon (:func:`_live`). ``direct``, when the
    response sets it to the server's own send, lets the run's channel write the frames
    of a caught-up stream itself."""

    __slots__ = ("_after", "_channel", "_daemon", "direct")

    def __init__(self, daemon: Daemon, channel: RunChannel, after: int | None) -> None:
        self._daemon = daemon
        self._channel = channel
        self._after = after
        self.direct: Send | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _live(self._daemon, self._channel, self._after, self.direct)


def run_stream(daemon: Daemon, run_id: str, last_event_id: int | None) -> AsyncIterable[bytes]:
    """The frames of one event stream: from the hub for a run executing here, from memory
    for one that finished lately, from the store otherwise."""
    channel = daemon.channel(run_id)
    if channel is not None:
        # A live stream yields to the loop between writes itself, and only when a write
        # follows another at once: a live subscriber usually waits for the next event.
        return LiveFrames(daemon, channel, last_event_id)
    if (retained := daemon.hub.retained.get(run_id)) is not None:
        return _paced(_retained(retained, last_event_id))
    # Not paced: a stored stream yields to the loop between writes itself (it waits for
    # the store or its feed between reads); pacing cost every stream of a followed run
    # one more turn of the loop per append.
    return StoredFrames(daemon, run_id, last_event_id)


class StoredFrames:
    """The frames of a run from the store (:func:`_stored`). ``direct``, when the
    response sets it to the server's own send, lets the run's feed (announcements.py)
    write the frames of a caught-up stream itself."""

    __slots__ = ("_after", "_daemon", "_run_id", "direct")

    def __init__(self, daemon: Daemon, run_id: str, after: int | None) -> None:
        self._daemon = daemon
        self._run_id = run_id
        self._after = after
        self.direct: Send | None = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return _stored(self._daemon, self._run_id, self._after, self.direct)


async def _paced(source: AsyncGenerator[bytes, None]) -> AsyncGenerator[bytes, None]:
    """``source``, yielding to the loop after every chunk, so the server sees a closed
    connection before the next write (see the module's docstring)."""
    try:
        async for chunk in source:
            yield chunk
            await asyncio.sleep(0)
    finally:
        await source.aclose()


def _as_resync(closing: tuple[bytes, bytes]) -> bytes:
    """A finished run's closing frames, the snapshot renamed ``resync``."""
    snapshot, terminal = closing
    return snapshot.replace(b"event: snapshot\n", b"event: resync\n", 1) + terminal


async def _live(
    daemon: Daemon, channel: RunChannel, after: int | None, direct: Send | None = None
) -> AsyncGenerator[bytes, None]:
    settings = daemon.settings
    # Subscribing and reading what came before happen in one step on the loop, so the
    # subscriber's cursor is exactly where the backlog (or the snapshot) ends: nothing
    # lost, nothing twice. Frames at or below what the client already has are never sent
    # (a client may resume from an id newer than this channel's events reached).
    subscriber = channel.subscribe(after)
    try:
        if after is None:
            if channel.closing is not None:
                yield b"".join(channel.closing)
                return
            yield frame(channel.seq, "snapshot", channel.folder.snapshot())
        while True:
            if subscriber.pending():
                # Another write right after the last one: yield first, so a closed
                # connection is noticed before it (see the module's docstring).
                await asyncio.sleep(0)
            elif channel.closing is not None:
                return  # the client has the end (or resumed from past it)
            elif direct is not None:
                # Caught up: the channel writes what comes next, until it lets go.
                if not await subscriber.write_directly(direct, settings.keepalive_s):
                    yield KEEPALIVE
                continue
            if not await subscriber.wait(settings.keepalive_s):
                yield KEEPALIVE
                continue
            if subscriber.behind(settings.subscriber_queue):
                subscriber.skip()
                if channel.closing is not None:
                    yield _as_resync(channel.closing)
                    return
                yield frame(channel.seq, "resync", channel.folder.snapshot())
                continue
            for index, chunk in enumerate(_batched(subscriber.take())):
                if index:
                    await asyncio.sleep(0)
                yield chunk
    finally:
        channel.unsubscribe(subscriber)


async def _retained(run: RetainedRun, after: int | None) -> AsyncGenerator[bytes, None]:
    """A run that finished lately, from the frames its live subscribers got."""
    if after is None:
        yield b"".join(run.closing)
        return
    for chunk in _batched(run.after(after)):
        yield chunk


async def _stored(
    daemon: Daemon, run_id: str, after: int | None, direct: Send | None = None
) -> AsyncGenerator[bytes, None]:
    if after is None:
        # In a thread: store reads and a long log's fold must not hold up the loop, which
        # serves every stream (see Daemon.snapshot).
        opening = await asyncio.to_thread(_opening, daemon, run_id)
        if opening is None:
            return
        first, after = opening
        yield first
        if after is None:
            return  # the run had ended: those were its closing frames
    async for chunk in _tail(daemon, run_id, after, direct):
        yield chunk


def _opening(daemon: Daemon, run_id: str) -> tuple[bytes, int | None] | None:
    """What a fresh stream of a stored run starts with: its snapshot so far and the seq
    to follow it from, or a finished run's closing frames and None (None: no such run)."""
    store = daemon.store
    run = store.get_run(run_id)
    if run is None:
        return None
    if run.status not in TERMINAL_RUN_STATUSES:
        # Executing in another process: its snapshot so far, folded incrementally.
        snapshot, seq = daemon.folds.snapshot(run)
        if snapshot["status"] not in TERMINAL_RUN_STATUSES:
            return frame(seq, "snapshot", snapshot), seq
        # It ended meanwhile: its closing frames, from the whole log as below.
    planned = run.snapshot()
    # Deltas batched as they were logged (one joined delta per record): the snapshot
    # folded is the same, and a long run's log is folded per record, not per delta.
    events = from_records(store.run_events(run_id), joined=True)
    if events and is_terminal(events[-1]):
        return b"".join(closing_frames(planned, events)), None
    after = events[-1].seq if events else 0
    return frame(after, "snapshot", fold(planned, events, after)), after


def _read_after(store: Store, run_id: str, seq: int) -> tuple[list[FeedFrame], int]:
    """The frames of ``run_id``'s stored events after ``seq`` and the last seq read."""
    return frames_after(store.run_events(run_id, after_seq=seq), seq)


async def _tail(
    daemon: Daemon, run_id: str, after: int, direct: Send | None = None
) -> AsyncIterator[bytes]:
    """Poll the store for events after ``after`` until the terminal event.

    A run whose owner died never gets a terminal event: once the store says the run
    ended (twice, a second apart — the owner writes the status just before the event),
    the stream sends what was stored since its last poll, then ends with a terminal
    event made from the stored snapshot, numbered one past the last stored event. Only
    the log after what was sent is read, however long the run's log."""
    settings = daemon.settings
    store = daemon.store
    if after > 0:
        previous = await asyncio.to_thread(store.run_events, run_id, after_seq=after - 1, limit=1)
        if previous and previous[0].seq == after and is_terminal(from_records(previous)[-1]):
            return  # the client already has the end
        if not previous or previous[0].seq != after:
            # Resumed from past the log's end (or a gap in it): the client has the end
            # when the log holds one at or before where it resumed. Without this, a
            # finished run's stream would end with an end made up past the client's id.
            end = await asyncio.to_thread(
                store.run_events, run_id, limit=1, types=TERMINAL_EVENT_TYPES
            )
            if end and end[0].seq <= after:
                return
    seq = after
    last_sent = progress_at = time.monotonic()
    next_check = time.monotonic() + 1.0
    next_recover = time.monotonic() + settings.recover_interval_s
    ended_checks = 0
    ended: Run | None = None  # stored as ended twice, a second apart
    # Woken when the run's feed read what the store announced (announcements.py): the
    # events are then taken from the feed, read once for every stream of the run. A
    # stream reads the store itself when it starts, when its wait ends unwoken (SQLite,
    # a lost announcement) and when the feed no longer holds what it needs. Caught up,
    # it lets the feed write what it reads next (Follower.write_directly), when the
    # response gave the server's own send.
    follower = daemon.announcements.follow(run_id, after)
    announced = daemon.announcements.active
    poll_s = settings.poll_s * (10 if announced else 1)
    if not announced:
        direct = None
    woken = False
    try:
        while not daemon.closing.is_set():
            follower.ready()  # before reading: events read from here on wake the wait
            held = follower.take(seq) if woken else None
            if held is None:
                taken, newest = await asyncio.to_thread(_read_after, store, run_id, seq)
            else:
                taken, newest = held, held[-1][0] if held else seq
            for index, chunk in enumerate(_batched(data for _, data, _ in taken)):
                if index:
                    await asyncio.sleep(0)  # a backlog: see the module's docstring
                yield chunk
            if taken and taken[-1][2]:
                return  # the terminal event
            read_some = newest > seq
            seq = max(seq, newest)
            follower.sent(seq)
            if ended is not None:  # none of it ended the run: its owner died
                if taken:
                    await asyncio.sleep(0)
                yield event_frame(
                    run_finished(
                        ended.status,
                        run_id=run_id,
                        seq=seq + 1,
                        at=ended.finished_at or now_iso(),
                        snapshot=ended.snapshot(),
                    )
                )
                return
            now = time.monotonic()
            if read_some:
                last_sent = progress_at = now
                ended_checks = 0
            elif now >= next_check and now - progress_at >= 1.0:
                # Nothing for a second: has the run ended without its terminal event?
                next_check = now + 1.0
                if now >= next_recover and daemon.store_damage is None:
                    next_recover = now + settings.recover_interval_s
                    # Marking a dead owner's runs writes: it may wait for another
                    # process's write lock.
                    await asyncio.to_thread(daemon.runtime.recover_interrupted)
                run = await asyncio.to_thread(store.get_run, run_id)
                if run is None:
                    return
                if run.status in TERMINAL_RUN_STATUSES:
                    ended_checks += 1
                    if ended_checks >= 2:
                        ended = run
                        woken = False
                        continue  # one more read: what was stored since goes first
            if now - last_sent >= settings.keepalive_s:
                last_sent = now
                yield KEEPALIVE
            if direct is None:
                woken = await follower.wait(poll_s)
                continue
            woken = await follower.write_directly(direct, poll_s)
            if follower.cursor > seq:  # the feed wrote for this stream
                seq = follower.cursor
                last_sent = time.monotonic()
                ended_checks = 0
                if follower.ended:
                    return
                # Announcements arrive: go on from the feed, not the store. Every stream
                # of a daemon reading the store (and the run) at its wait's end, all in
                # the same second, held up the feeds' own reads (p99 +150 ms across
                # daemons, bench/bench_cross_daemon.py). A wait with no word from the
                # feed still reads the store.
                woken = True
                progress_at = last_sent
    finally:
        follower.close()
