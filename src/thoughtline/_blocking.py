"""Running coroutines to their end from synchronous code, including code that an event
loop is already running (a Jupyter cell, an async web handler calling a sync library).

There, ``asyncio.run`` refuses to start a second loop in the same thread. A
:class:`BlockingRunner` then runs the coroutines on a loop of its own, on a thread of its
own, and blocks the caller until each ends, as any synchronous library call does. Ctrl-C
(``KeyboardInterrupt`` in the waiting thread) cancels the coroutine and waits for it to
wind down (a run ends ``cancelled``, what arrived kept) before it propagates, exactly as
``asyncio.run`` does in a thread with no loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["BlockingRunner", "loop_running"]

T = TypeVar("T")

_WIND_DOWN_S = 30.0
"""How long Ctrl-C waits for a cancelled coroutine to finish its cleanup."""


def loop_running() -> bool:
    """Whether an event loop runs in the calling thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class BlockingRunner:
    """Runs coroutines to their end for synchronous callers, all on one event loop (what
    one coroutine opens, the next may use): in the caller's thread when no loop runs
    there, else on a thread of its own. Close it when done."""

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        if not loop_running():
            self._runner = asyncio.Runner()
            return
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=loop.run_forever, name="thoughtline-blocking-loop", daemon=True
        )
        self._thread.start()

    @property
    def threaded(self) -> bool:
        """Whether coroutines run on a thread of their own."""
        return self._thread is not None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` to its end and return its result (or raise its error)."""
        if self._runner is not None:
            if loop_running():
                coroutine.close()
                raise RuntimeError(
                    "this object was made outside an event loop and is now called inside "
                    "one; make it where it is used"
                )
            return self._runner.run(coroutine)
        assert self._loop is not None
        ended = threading.Event()

        async def tracked() -> T:
            try:
                return await coroutine
            finally:
                ended.set()

        future = asyncio.run_coroutine_threadsafe(tracked(), self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:
            future.cancel()  # cancels the task on its loop
            ended.wait(_WIND_DOWN_S)
            raise
        except concurrent.futures.CancelledError:
            raise asyncio.CancelledError from None

    def close(self) -> None:
        """Close the loop (and stop its thread)."""
        if self._runner is not None:
            self._runner.close()
            return
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = self._thread = None

        async def wind_down() -> None:
            await loop.shutdown_asyncgens()
            await loop.shutdown_default_executor()

        asyncio.run_coroutine_threadsafe(wind_down(), loop).result(_WIND_DOWN_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(_WIND_DOWN_S)
        loop.close()
