"""The ``total`` timeout of one attempt, kept by a timer (see :class:`Deadline`)."""

from __future__ import annotations

import asyncio


class DeadlineExceeded(Exception):
    """The attempt's total timeout expired (internal; it becomes an ``StreamError`` event)."""


class Deadline:
    """The ``total`` timeout of one attempt, kept by a timer, not by chunk arrival.

    ``asyncio.timeout`` cannot wrap a generator that yields to its consumer: it would
    cancel whatever the consumer is awaiting. So the transport marks the moments it
    awaits the network (``waiting``). When the timer fires during one, it cancels the
    task, the await raises ``CancelledError`` and :meth:`absorb` turns that back into a
    timeout; otherwise it sets ``expired``, which the read loop checks before each
    read. Per chunk that costs two attribute stores and one load, no clock call.

    The task that starts the attempt must be the one that iterates the call (as
    ``async for`` does).
    """

    __slots__ = ("_cancelled", "_cancelling", "_handle", "_task", "expired", "waiting")

    def __init__(self, seconds: float | None) -> None:
        self.expired = False
        self.waiting = False
        self._cancelled = False
        self._task = asyncio.current_task()
        self._cancelling = 0 if self._task is None else self._task.cancelling()
        self._handle: asyncio.TimerHandle | None = None
        if seconds is not None and self._task is not None:
            self._handle = asyncio.get_running_loop().call_later(seconds, self._fire)

    def _fire(self) -> None:
        self.expired = True
        if self.waiting and self._task is not None:
            self._cancelled = True
            self._task.cancel()

    def absorb(self) -> bool:
        """For a ``CancelledError`` raised while waiting: True when the timer caused it
        (the cancellation is withdrawn), False when the task was cancelled by someone
        else, which must propagate."""
        if not self._cancelled or self._task is None:
            return False
        self._cancelled = False
        return self._task.uncancel() <= self._cancelling

    def disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        if self._cancelled and self._task is not None:
            # The timer's cancellation was turned into another error on the way (the
            # read still failed, and was reported as a timeout): withdraw it.
            self._cancelled = False
            self._task.uncancel()
