"""Runs executing in the background of a long-lived process.

The daemon, the MCP server and the ACP agent each start runs that outlive the request
that started them, follow their live events, cancel them on request and interrupt them
when the process ends. :class:`RunManager` does this once for all of them::

    manager = RunManager(runtime)
    handle = await manager.start(spec, explicit_mode="surface", observer=print)
    events = handle.subscribe()          # live events, then None at the run's end
    run = await handle.wait(timeout_s=30)  # the run (still running if the wait timed out)
    manager.cancel(handle.run_id)        # tasks end cancelled, what arrived is kept
    await manager.shutdown()             # the rest end interrupted; waits for them

Observers are called synchronously on the event loop, in the order the run emits its
events; an observer that raises is logged and does not disturb the run or other
observers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run
from thoughtline.runtime.plan import RunSpec
from thoughtline.runtime.runner import RunEvent, RunObserver, Runtime
from thoughtline.store.base import StoreError

__all__ = ["RunHandle", "RunManager", "RunManagerClosed"]

logger = logging.getLogger(__name__)

DEFAULT_SHUTDOWN_TIMEOUT_S: Final = 30.0
CANCEL_GRACE_S: Final = 5.0


class RunManagerClosed(ThoughtlineError):
    """The manager is shutting down and starts no more runs."""

    def __init__(self) -> None:
        super().__init__("SHUTTING_DOWN", "This process is shutting down; no new runs start.")


class RunHandle:
    """One run executing in the background: its live record, its events, its end.

    ``run`` is the in-memory record the runtime updates as the run goes, so it is
    always at least as fresh as the stored row."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._observers: list[RunObserver] = []
        self._queues: list[asyncio.Queue[RunEvent | None]] = []
        self._task: asyncio.Task[Run] | None = None

    @property
    def run_id(self) -> str:
        return self.run.id

    @property
    def done(self) -> bool:
        """True once the run has ended (or its execution stopped unexpectedly)."""
        return self._task is not None and self._task.done()

    def add_observer(self, observer: RunObserver) -> None:
        """Call ``observer`` with every further live event of this run."""
        self._observers.append(observer)

    def remove_observer(self, observer: RunObserver) -> None:
        if observer in self._observers:
            self._observers.remove(observer)

    def subscribe(self) -> asyncio.Queue[RunEvent | None]:
        """A queue that receives every further live event, then ``None`` when the run
        ends (at once when it already has). Unbounded: the run never waits for readers;
        call :meth:`unsubscribe` when done reading."""
        queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        if self.done:
            queue.put_nowait(None)
        else:
            self._queues.append(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[RunEvent | None]) -> None:
        if queue in self._queues:
            self._queues.remove(queue)

    async def wait(self, timeout_s: float | None = None) -> Run:
        """Wait for the run's end, at most ``timeout_s`` seconds; return the run (still
        running when the wait timed out). Cancelling the waiter does not cancel the run.
        Re-raises what stopped the execution if it did not end normally."""
        assert self._task is not None, "the handle's run was never started"
        await asyncio.wait({self._task}, timeout=timeout_s)
        if self._task.done():
            return self._task.result()
        return self.run

    def _observe(self, event: RunEvent) -> None:
        for observer in list(self._observers):
            try:
                observer(event)
            except Exception:  # a surface bug must not break the run
                logger.exception("observing event %s of run %s failed", event.seq, event.run_id)
        for queue in self._queues:
            queue.put_nowait(event)

    def _close(self) -> None:
        for queue in self._queues:
            queue.put_nowait(None)
        self._queues.clear()


class RunManager:
    """Starts runs in the background of one event loop and tracks them until they end.

    One manager per runtime and process: :meth:`interrupt_all` stops every run the
    runtime executes in this process, as a process shutting down must."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._handles: dict[str, RunHandle] = {}
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`interrupt_all` or :meth:`shutdown` was called."""
        return self._closing

    async def start(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        observer: RunObserver | None = None,
        on_start: Callable[[RunHandle], None] | None = None,
        on_finish: Callable[[RunHandle], None] | None = None,
    ) -> RunHandle:
        """Prepare ``spec`` (raising ``ThoughtlineError`` for bad input) and start
        executing it. Preparing stores the run, which may wait for another process's
        write lock, so it happens in a thread while the loop serves others. Raises
        :class:`RunManagerClosed` once shutdown has begun (a run prepared meanwhile
        stays planned and is marked interrupted by the next process that opens the
        store)."""
        if self._closing:
            raise RunManagerClosed()
        run = await asyncio.to_thread(
            self.runtime.prepare,
            spec,
            explicit_mode=explicit_mode,
            worker_backend=worker_backend,
        )
        if self._closing:
            raise RunManagerClosed()
        return await self.start_prepared(
            run, observer=observer, on_start=on_start, on_finish=on_finish
        )

    async def start_prepared(
        self,
        run: Run,
        *,
        observer: RunObserver | None = None,
        on_start: Callable[[RunHandle], None] | None = None,
        on_finish: Callable[[RunHandle], None] | None = None,
    ) -> RunHandle:
        """Start executing a run already prepared by this manager's runtime.

        ``on_start`` is called with the handle before the run's first event; ``observer``
        sees every live event from the first; ``on_finish`` is called once the run has
        ended and everything it emitted is stored. When this returns the
        runtime knows the run, so :meth:`cancel` reaches it."""
        if self._closing:
            raise RunManagerClosed()
        handle = RunHandle(run)
        if observer is not None:
            handle.add_observer(observer)
        self._handles[run.id] = handle
        if on_start is not None:
            on_start(handle)
        handle._task = asyncio.get_running_loop().create_task(
            self._execute(handle, on_finish), name=f"thoughtline run {run.id}"
        )
        handle._task.add_done_callback(self._log_failure)
        # Let the task start, so the runtime has registered the run when we return.
        await asyncio.sleep(0)
        return handle

    async def _execute(
        self, handle: RunHandle, on_finish: Callable[[RunHandle], None] | None
    ) -> Run:
        try:
            return await self.runtime.execute(handle.run, observer=handle._observe)
        finally:
            self._handles.pop(handle.run_id, None)
            handle._close()
            if on_finish is not None:
                try:
                    on_finish(handle)
                except Exception:
                    logger.exception("finishing run %s failed", handle.run_id)

    def _log_failure(self, task: asyncio.Task[Run]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        run_id = task.get_name().removeprefix("thoughtline run ")
        if isinstance(error, StoreError):  # disk full, damaged file: one line
            logger.error("run %s stopped: %s", run_id, error.message)
        elif error is not None:  # the runtime records task failures itself: a bug
            logger.error("run %s failed unexpectedly", run_id, exc_info=error)

    def get(self, run_id: str) -> RunHandle | None:
        """The handle of a run executing here, or None."""
        return self._handles.get(run_id)

    def running(self) -> list[RunHandle]:
        """Every run executing here, in the order they started."""
        return list(self._handles.values())

    def cancel(self, run_id: str) -> bool:
        """Ask a run executing here to stop: its running tasks end ``cancelled`` with
        what arrived kept. False when the runtime does not execute that run."""
        return self.runtime.cancel(run_id)

    async def wait(self, run_id: str, timeout_s: float | None = None) -> Run | None:
        """:meth:`RunHandle.wait` for a run executing here; None when it is not."""
        handle = self._handles.get(run_id)
        return None if handle is None else await handle.wait(timeout_s)

    def interrupt_all(self) -> list[str]:
        """Start no more runs and stop every run executing here: they end
        ``interrupted`` (not cancelled, not lost). Synchronous and idempotent; returns
        the ids of the runs interrupted."""
        self._closing = True
        return self.runtime.interrupt_all()

    async def shutdown(self, grace_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> None:
        """Interrupt every run and wait, at most ``grace_s`` seconds, until each has
        recorded its end; executions still going then are cancelled."""
        self.interrupt_all()
        tasks = [handle._task for handle in self._handles.values() if handle._task]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=grace_s)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=CANCEL_GRACE_S)
