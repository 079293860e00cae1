"""Runs executing in the background of a long-lived process.

The daemon, the MCP server and the ACP agent each start runs that outlive the request
that started them, follow their live events, cancel them on request and interrupt them
when the process ends. :class:`RunManager` does this once for all of them::

    manager = RunManager(runtime)
    managed = await manager.start(spec, explicit_mode="surface", observer=print)
    events = managed.subscribe()          # live events, then None at the run's end
    run = await managed.wait(timeout_s=30)  # the run (still running if the wait timed out)
    manager.cancel(managed.run_id)        # tasks end cancelled, what arrived is kept
    await manager.shutdown()              # the rest end interrupted; waits for them

A :class:`ManagedRun` is the manager's record of one run; the public
:class:`thoughtline.ManagedRun` (:mod:`thoughtline.api.orchestrator`) is built on it.

Observers are called synchronously on the event loop, in the order the run emits its
events; an observer that raises is logged and does not disturb the run or other
observers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Final

from thoughtline.errors import ThoughtlineError
from thoughtline.records import Run, TaskError
from thoughtline.records.run_events import RunEvent
from thoughtline.runtime.engine.runner import RunObserver, Runtime
from thoughtline.runtime.planning.plan import RunSpec
from thoughtline.runtime.planning.run_tools import RunTools
from thoughtline.runtime.planning.toolbox import StartedTools
from thoughtline.store.base import StoreError

__all__ = ["ManagedRun", "RunManager", "RunManagerClosed", "RunManagerFull"]

logger = logging.getLogger(__name__)

DEFAULT_SHUTDOWN_TIMEOUT_S: Final = 30.0
CANCEL_GRACE_S: Final = 5.0
RETRY_AFTER_S: Final = 5
"""When a process at its ``[server] max_active_runs`` asks callers to try again: runs last
seconds to minutes, so a slot frees soon, and a client retrying this often does not
turn a full process into a busy one."""


class RunManagerClosed(ThoughtlineError):
    """The manager is shutting down and starts no more runs."""

    def __init__(self) -> None:
        super().__init__("SHUTTING_DOWN", "This process is shutting down; no new runs start.")


class RunManagerFull(ThoughtlineError):
    """The manager already executes its ``max_active`` runs; nothing was planned, stored
    or started (``[server] max_active_runs``)."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            "SERVER_AT_CAPACITY",
            f"This thoughtline server is already running {limit} run(s), its limit "
            f"([server] max_active_runs in thoughtline.toml); try again in {RETRY_AFTER_S} s.",
            retryable=True,
        )
        self.limit = limit
        self.retry_after_s = RETRY_AFTER_S


class ManagedRun:
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

    @property
    def task(self) -> asyncio.Task[Run]:
        """The asyncio task executing the run. Awaiting it directly ties the awaiter to
        the execution: cancelling the awaiter cancels the run (its tasks end
        ``cancelled``), which :meth:`wait` does not do."""
        assert self._task is not None, "the run was never started"
        return self._task

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
        task = self.task
        await asyncio.wait({task}, timeout=timeout_s)
        if task.done():
            return task.result()
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

    def __init__(self, runtime: Runtime, *, max_active: int | None = None) -> None:
        self.runtime = runtime
        self.max_active = max_active
        """At most this many runs executing or being started at once (:meth:`start`
        refuses more); ``None``: no limit."""
        self._runs: dict[str, ManagedRun] = {}
        self._starting = 0
        """Runs :meth:`start` accepted that are not in ``_runs`` yet (planning, starting
        their tool servers, being stored): they hold their place under ``max_active``."""
        self._closing = False
        # A long-lived process reuses its connections between runs; shutdown closes them.
        runtime.clients.hold()

    @property
    def closing(self) -> bool:
        """True once :meth:`interrupt_all` or :meth:`shutdown` was called."""
        return self._closing

    @property
    def active(self) -> int:
        """Runs executing here or being started by :meth:`start`."""
        return len(self._runs) + self._starting

    @property
    def full(self) -> bool:
        """True while :meth:`start` would refuse a run for ``max_active``."""
        return self.max_active is not None and self.active >= self.max_active

    async def start(
        self,
        spec: RunSpec,
        *,
        explicit_mode: str | None = None,
        worker_backend: str | None = None,
        observer: RunObserver | None = None,
        on_start: Callable[[ManagedRun], None] | None = None,
        on_finish: Callable[[ManagedRun], None] | None = None,
        tools: RunTools | None = None,
        wait_for_tools: bool = True,
    ) -> ManagedRun:
        """Prepare ``spec`` (raising ``ThoughtlineError`` for bad input) and start
        executing it. Raises :class:`RunManagerClosed` once shutdown has begun (a run
        prepared meanwhile stays planned and is marked interrupted by the next process
        that opens the store). ``tools``: see :class:`~thoughtline.runtime.planning.run_tools.RunTools`.

        The run's tool servers (configured ones and those of ``tools``) are started before
        it is stored: one that does not start (``TOOL_SERVER_UNAVAILABLE``) or a tool it
        does not offer (``TOOL_NOT_FOUND``, ``TOOL_NOT_ALLOWED``) raises with nothing
        stored, and the run uses them. Without ``wait_for_tools`` the run is stored at
        once and starts them itself, telling each start live (``tool_server.start``
        after ``run.started``): one that does not start, or a tool it does not offer,
        fails the run's tasks instead. With ``max_active`` runs executing or starting,
        raises :class:`RunManagerFull` before anything is planned or stored."""
        if self._closing:
            raise RunManagerClosed()
        if self.full:
            assert self.max_active is not None
            raise RunManagerFull(self.max_active)
        # The place is taken before the first await, on the event loop's one thread: of
        # two starts racing for the last place, the second is refused here.
        self._starting += 1
        try:
            run, started = await self._prepare(
                spec, explicit_mode, worker_backend, tools, wait_for_tools=wait_for_tools
            )
        finally:
            self._starting -= 1
        # No await since: launch() puts the run in _runs before another start looks.
        managed = self.launch(
            run,
            observer=observer,
            on_start=on_start,
            on_finish=on_finish,
            tools=tools,
            started=started,
        )
        await asyncio.sleep(0)  # as start_prepared: the runtime knows the run on return
        return managed

    async def _prepare(
        self,
        spec: RunSpec,
        explicit_mode: str | None,
        worker_backend: str | None,
        tools: RunTools | None,
        *,
        wait_for_tools: bool,
    ) -> tuple[Run, StartedTools | None]:
        """Plan, start the tool servers (unless the run is to start them) and store the
        run (see :meth:`start`)."""
        plan = functools.partial(
            self.runtime.plan,
            spec,
            explicit_mode=explicit_mode,
            worker_backend=worker_backend,
            tools=tools,
        )
        # A follow-up reads its conversation from the store: off the event loop, which
        # serves every live stream meanwhile.
        run = await asyncio.to_thread(plan) if spec.continues is not None else plan()
        started = await self.runtime.start_tools(run, tools=tools) if wait_for_tools else None
        try:
            await self.runtime.store_async(run)
        except BaseException:
            if started is not None:
                await started.aclose()
            raise
        if self.closing:  # shutdown began while the servers started or the run was stored
            if started is not None:
                await started.aclose()
            raise RunManagerClosed()
        return run, started

    async def start_prepared(
        self,
        run: Run,
        *,
        observer: RunObserver | None = None,
        on_start: Callable[[ManagedRun], None] | None = None,
        on_finish: Callable[[ManagedRun], None] | None = None,
        tools: RunTools | None = None,
    ) -> ManagedRun:
        """Start executing a run already prepared by this manager's runtime, as
        :meth:`launch` does. When this returns the runtime knows the run, so
        :meth:`cancel` reaches it."""
        managed = self.launch(
            run, observer=observer, on_start=on_start, on_finish=on_finish, tools=tools
        )
        # Let the task start, so the runtime has registered the run when we return.
        await asyncio.sleep(0)
        return managed

    def launch(
        self,
        run: Run,
        *,
        observer: RunObserver | None = None,
        on_start: Callable[[ManagedRun], None] | None = None,
        on_finish: Callable[[ManagedRun], None] | None = None,
        tools: RunTools | None = None,
        started: StartedTools | None = None,
    ) -> ManagedRun:
        """Schedule a run already prepared by this manager's runtime on the running
        event loop, for callers that cannot await (the runtime learns of the run once
        the loop next runs, so a :meth:`cancel` before then returns False).

        ``on_start`` is called with the managed run before the run's first event;
        ``observer`` sees every live event from the first; ``on_finish`` is called once
        the run has ended and everything it emitted is stored. ``tools``: as the run was
        prepared with; ``started``: its servers, from
        :meth:`~thoughtline.runtime.engine.runner.Runtime.start_tools` (the run stops them)."""
        if self._closing:
            raise RunManagerClosed()
        managed = ManagedRun(run)
        if observer is not None:
            managed.add_observer(observer)
        self._runs[run.id] = managed
        if on_start is not None:
            on_start(managed)
        managed._task = asyncio.get_running_loop().create_task(
            self._execute(managed, on_finish, tools, started), name=f"thoughtline run {run.id}"
        )
        managed._task.add_done_callback(self._log_failure)
        return managed

    async def _execute(
        self,
        managed: ManagedRun,
        on_finish: Callable[[ManagedRun], None] | None,
        tools: RunTools | None,
        started: StartedTools | None,
    ) -> Run:
        try:
            return await self.runtime.execute(
                managed.run, observer=managed._observe, tools=tools, started=started
            )
        finally:
            self._runs.pop(managed.run_id, None)
            managed._close()
            if on_finish is not None:
                try:
                    on_finish(managed)
                except Exception:
                    logger.exception("finishing run %s failed", managed.run_id)

    def _log_failure(self, task: asyncio.Task[Run]) -> None:
        if task.cancelled():
            return
        error = task.exception()
        run_id = task.get_name().removeprefix("thoughtline run ")
        if isinstance(error, StoreError):  # disk full, damaged file: one line
            logger.error("run %s stopped: %s", run_id, error.message)
        elif error is not None:  # the runtime records task failures itself: a bug
            logger.error("run %s failed unexpectedly", run_id, exc_info=error)

    def get(self, run_id: str) -> ManagedRun | None:
        """The managed run executing here with that id, or None."""
        return self._runs.get(run_id)

    def running(self) -> list[ManagedRun]:
        """Every run executing here, in the order they started."""
        return list(self._runs.values())

    def cancel(self, run_id: str, error: TaskError | None = None) -> bool:
        """Ask a run executing here to stop: its running tasks end ``cancelled`` with
        what arrived kept (and ``error``, the reason, when given). False when the
        runtime does not execute that run."""
        return self.runtime.cancel(run_id, error)

    async def wait(self, run_id: str, timeout_s: float | None = None) -> Run | None:
        """:meth:`ManagedRun.wait` for a run executing here; None when it is not."""
        managed = self._runs.get(run_id)
        return None if managed is None else await managed.wait(timeout_s)

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
        tasks = [managed._task for managed in self._runs.values() if managed._task]
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=grace_s)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=CANCEL_GRACE_S)
        await self.runtime.aclose()
