"""The owner's lease: while a process lives, a thread refreshes the heartbeat of the
unfinished runs its store created, writing or not, so crash recovery on another host can
presume the owner dead after a few missed beats (see
:class:`~thoughtline.store.base.LeasedStore`)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from thoughtline.store.base import StoreError

logger = logging.getLogger(__name__)

Beat = Callable[[list[str]], set[str]]
"""Refreshes the heartbeat of the given runs; returns those still unfinished."""


class OwnerLease:
    """Holds the runs a store owns and beats for them every ``interval_s`` until
    closed. The thread starts with the first run held."""

    def __init__(self, beat: Beat, interval_s: float) -> None:
        self._beat = beat
        self.interval_s = interval_s
        self._owned: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, run_id: str) -> None:
        with self._lock:
            self._owned.add(run_id)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="thoughtline-heartbeat", daemon=True
                )
                self._thread.start()

    def release(self, run_id: str) -> None:
        with self._lock:
            self._owned.discard(run_id)

    def close(self) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            with self._lock:
                owned = sorted(self._owned)
            if not owned:
                continue
            try:
                alive = self._beat(owned)
            except StoreError as exc:  # the next beat retries; recovery judges the silence
                logger.warning("thoughtline: heartbeat not written: %s", exc)
                continue
            with self._lock:  # runs that ended meanwhile (here or by recovery elsewhere)
                self._owned -= set(owned) - alive
