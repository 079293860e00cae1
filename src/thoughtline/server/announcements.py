"""Waking the streams that follow runs of other processes.

A run executing in another daemon (or a CLI process) reaches this daemon only through the
store's run event log. A store that announces appends (PostgreSQL: ``LISTEN``/``NOTIFY``
carrying the run id and the last event number; the events themselves stay in the table)
wakes the streams following that run as soon as the append commits. A store that does
not (SQLite) leaves them polling every ``poll_s``; so does a lost announcement, as the
wait below always ends after ``poll_s``.

One listener per daemon, on a thread of its own (the driver's wait blocks), hands each
announcement to the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from thoughtline.store.base import Store

__all__ = ["Announcements", "Follower"]

logger = logging.getLogger(__name__)

_WAIT_S = 0.5  # how long the listener thread waits before it checks whether to stop


class _Announced(Protocol):
    run_id: str


class _Listener(Protocol):
    def wait(self, timeout_s: float, *, limit: int | None = None) -> list[_Announced]: ...

    def close(self) -> None: ...


@runtime_checkable
class _Announcing(Protocol):
    def listen(self) -> _Listener: ...


class Follower:
    """One stream following one run: :meth:`wait` returns when the store announced new
    events of the run since the last :meth:`ready`, or after ``timeout_s``."""

    def __init__(self, release: Callable[[Follower], None]) -> None:
        self.woken = asyncio.Event()
        self._release = release

    def ready(self) -> None:
        """Call before reading the store: an announcement after this wakes :meth:`wait`."""
        self.woken.clear()

    async def wait(self, timeout_s: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.woken.wait(), timeout_s)

    def close(self) -> None:
        self._release(self)


class Announcements:
    """The daemon's one listener for run event announcements (when its store has them)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._followers: dict[str, set[Follower]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

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

    def follow(self, run_id: str) -> Follower:
        follower = Follower(lambda done: self._followers.get(run_id, set()).discard(done))
        self._followers.setdefault(run_id, set()).add(follower)
        return follower

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
            run_ids = {item.run_id for item in announced}
            if run_ids:
                loop.call_soon_threadsafe(self._wake, run_ids)
        if listener is not None:
            listener.close()

    def _wake(self, run_ids: set[str]) -> None:
        for run_id in run_ids:
            for follower in self._followers.get(run_id, ()):
                follower.woken.set()
